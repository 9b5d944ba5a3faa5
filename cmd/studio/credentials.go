package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/postgres"
	"github.com/chainstudio/studio/store/seal"
	"github.com/chainstudio/studio/store/vault"
)

// keyEnv holds the credentials key itself (64 hex digits), for deployments
// that inject secrets as environment variables.
const keyEnv = "STUDIO_CREDENTIALS_KEY"

// keySource is where the credentials key comes from.
type keySource struct {
	path    string // the key file; "" when the key is in the environment or there is none
	fromEnv bool
}

// describe names the source for log lines and errors.
func (k keySource) describe() string {
	switch {
	case k.fromEnv:
		return "$" + keyEnv
	case k.path != "":
		return k.path
	}
	return "none"
}

// credentialKeySource decides where the key is: the environment, the
// --credentials-key-file flag, or (SQLite only) a file beside the database.
// A PostgreSQL studio with neither has no key: its processes must share one.
func credentialKeySource(dbPath, flagPath string) keySource {
	switch {
	case os.Getenv(keyEnv) != "":
		return keySource{fromEnv: true}
	case flagPath != "":
		return keySource{path: flagPath}
	case postgres.IsDSN(dbPath):
		return keySource{}
	}
	return keySource{path: dbPath + ".key"}
}

// openVault loads (or on a database that never had credentials, creates)
// the key and opens the vault over db. A key that does not open the
// database's credentials, or a key file that is missing while the database
// holds credentials, is an error naming the file. A rotation interrupted
// between its commit and the renaming of the new key file is finished here.
func openVault(ctx context.Context, db store.CredentialStore, src keySource, log *slog.Logger) (*vault.Vault, error) {
	check, err := db.CredentialKeyCheck(ctx)
	if err != nil {
		return nil, err
	}
	var key *seal.Key
	switch {
	case src.fromEnv:
		if key, err = seal.ParseKey(os.Getenv(keyEnv)); err != nil {
			return nil, fmt.Errorf("%s: %w", keyEnv, err)
		}
	case src.path != "":
		if err := finishRotation(src.path, check); err != nil {
			return nil, err
		}
		key, err = seal.LoadFile(src.path)
		if errors.Is(err, fs.ErrNotExist) {
			if check != nil {
				return nil, fmt.Errorf("credentials key file %s is missing, and the database holds credentials sealed with a key: restore the file from the backup made with the database (or start with --credentials-key-file)", src.path)
			}
			var text string
			if key, text, err = seal.Generate(); err != nil {
				return nil, err
			}
			if err := seal.WriteFile(src.path, text); err != nil {
				return nil, err
			}
			log.Warn("created the credentials key: back it up with the database, without it stored credentials cannot be read", "key_file", src.path)
		} else if err != nil {
			return nil, err
		}
	}
	v, err := vault.Open(ctx, db, key, vault.Options{Logger: log, Reload: reloader(src)})
	if err != nil {
		return nil, fmt.Errorf("%w (key: %s)", err, src.describe())
	}
	return v, nil
}

// reloader reads the key again after another process rotated it.
func reloader(src keySource) func() (*seal.Key, error) {
	if src.path == "" {
		return nil
	}
	return func() (*seal.Key, error) { return seal.LoadFile(src.path) }
}

// finishRotation: a rotation writes the new key to PATH.new, commits, then
// renames it over PATH. If the process died between the two, the database
// opens with PATH.new only; rename it now. A PATH.new the database does not
// open with is a rotation that never committed: remove it.
func finishRotation(path string, check []byte) error {
	next := path + ".new"
	nk, err := seal.LoadFile(next)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || check == nil || vault.KeyOpens(nk, check) != nil {
		return os.Remove(next)
	}
	return os.Rename(next, path)
}

const credentialsHelp = `studio credentials add NAME --type TYPE --field K=V --host H …   add one (--field K=- reads V from stdin)
studio credentials list                                   names, types, which fields are set, hosts, last use
studio credentials set NAME --field K=V --host H …        replace some fields, the hosts (or --type to change it)
studio credentials remove NAME
studio credentials rotate-key                             re-seal every credential under a new key`

// cmdCredentials manages credentials in the database, like the page and
// the API; values are read from flags or stdin and never printed.
func cmdCredentials(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("credentials", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := fs.String("db", envOr("STUDIO_DB", "studio.db"), "the database: a SQLite `FILE`, or a postgres:// URL (env STUDIO_DB)")
	keyFile := fs.String("credentials-key-file", os.Getenv("STUDIO_CREDENTIALS_KEY_FILE"), "the credentials key `FILE` (default: the database's path + .key on SQLite; env STUDIO_CREDENTIALS_KEY_FILE, or the key itself in STUDIO_CREDENTIALS_KEY)")
	typ := fs.String("type", "", "the credential's `TYPE`: "+strings.Join(credential.TypeNames(), ", "))
	var fields, chains, hosts listFlag
	fs.Var(&fields, "field", "a field as `K=V` (repeatable; K=- reads V from stdin; for a headers credential, headers=Name: value, repeatable)")
	fs.Var(&chains, "chain", "limit it to the chain with this `ID` (repeatable; default: every chain)")
	fs.Var(&hosts, "host", "send it only to this `HOST` (repeatable): api.example.com, host:port, *.example.com or a base URL https://api.example.com/v1/; set replaces the list; without any, a provider key goes to its provider's API and an HTTP credential nowhere")
	fs.Usage = func() {
		printUsage(fs, "studio credentials add|list|set|remove|rotate-key [NAME] [flags]",
			"Manages the credentials chains use by name (an http node's \"auth\": {\"credential\": NAME}):\n\n"+credentialsHelp+"\n\n"+
				"Values are sealed with AES-256-GCM under the credentials key and never shown again.")
	}
	args, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(args) == 0 {
		fmt.Fprintf(stderr, "studio credentials: missing the action: add, list, set, remove or rotate-key\n\n")
		fs.Usage()
		return exitUsage
	}
	verb, args := args[0], args[1:]
	want := map[string][]string{"add": {"NAME"}, "list": nil, "set": {"NAME"}, "remove": {"NAME"}, "rotate-key": nil}
	names, known := want[verb]
	if !known {
		fmt.Fprintf(stderr, "studio credentials: unknown action %q: want add, list, set, remove or rotate-key\n\n", verb)
		fs.Usage()
		return exitUsage
	}
	if !wantArgs(fs, args, names...) {
		return exitUsage
	}
	if verb == "add" && *typ == "" {
		fmt.Fprintf(stderr, "studio credentials add: --type is required: %s\n", strings.Join(credential.TypeNames(), ", "))
		return exitUsage
	}
	db, err := openAdminStore(ctx, *dbPath)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	defer db.Close()
	src := credentialKeySource(*dbPath, *keyFile)
	v, err := openVault(ctx, db, src, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		fmt.Fprintf(stderr, "studio credentials: %v\n", err)
		return exitFailed
	}
	const who = "cli"
	switch verb {
	case "add", "set":
		t := *typ
		if verb == "set" && t == "" {
			if cr, gerr := v.Get(ctx, args[0]); gerr == nil {
				t = cr.Type
			}
		}
		var values credential.Values
		if values, err = fieldValues(t, fields, stdin); err != nil {
			fmt.Fprintf(stderr, "studio credentials %s: %v\n", verb, err)
			return exitUsage
		}
		var cr *store.Credential
		if verb == "add" {
			cr, err = v.Add(ctx, who, vault.Input{Name: args[0], Type: t, Values: values, Chains: chains, Hosts: hosts})
		} else {
			ch := vault.Change{Type: *typ, Values: values}
			if len(chains) > 0 {
				list := []string(chains)
				ch.Chains = &list
			}
			if len(hosts) > 0 {
				list := []string(hosts)
				ch.Hosts = &list
			}
			cr, err = v.Update(ctx, who, args[0], ch)
		}
		if err == nil {
			fmt.Fprintf(stdout, "saved %s (%s): %s set; %s\n", cr.Name, cr.Type, strings.Join(cr.Set, ", "), hostsText(*cr))
		}
	case "list":
		err = listCredentials(ctx, v, stdout)
	case "remove":
		if err = v.Remove(ctx, args[0]); err == nil {
			fmt.Fprintf(stdout, "removed %s: chains that name it fail validation from now on\n", args[0])
		}
	case "rotate-key":
		err = rotateKey(ctx, v, src, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "studio credentials %s: %s\n", verb, store.ErrorMessage(err))
		if store.ErrorCode(err) == store.EINVALID {
			return exitUsage
		}
		return exitFailed
	}
	return exitOK
}

// fieldValues reads K=V flags into a type's values: K=- takes V from a line
// of stdin (so that a secret stays out of the shell's history), and a Map
// field collects "Name: value" headers.
func fieldValues(typName string, fields []string, stdin io.Reader) (credential.Values, error) {
	typ, ok := credential.Lookup(typName)
	if !ok {
		return nil, fmt.Errorf("unknown type %q: want one of %s", typName, strings.Join(credential.TypeNames(), ", "))
	}
	values := credential.Values{}
	var in *bufio.Reader
	for _, kv := range fields {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--field %q: want K=V", kv)
		}
		f, known := typ.Field(k)
		if !known {
			return nil, fmt.Errorf("a %s credential has no field %q", typ.Name, k)
		}
		if val == "-" {
			if in == nil {
				in = bufio.NewReader(stdin)
			}
			line, err := in.ReadString('\n')
			if err != nil && line == "" {
				return nil, fmt.Errorf("--field %s=-: nothing on stdin", k)
			}
			val = strings.TrimRight(line, "\r\n")
		}
		if f.Map {
			name, hv, ok := strings.Cut(val, ":")
			if !ok {
				return nil, fmt.Errorf("--field %s=%q: want a header as Name: value", k, strings.SplitN(val, " ", 2)[0])
			}
			m, _ := values[k].(map[string]any)
			if m == nil {
				m = map[string]any{}
			}
			m[strings.TrimSpace(name)] = strings.TrimSpace(hv)
			values[k] = m
			continue
		}
		values[k] = val
	}
	return values, nil
}

func listCredentials(ctx context.Context, v *vault.Vault, stdout io.Writer) error {
	list, err := v.List(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no credentials: add one with `studio credentials add NAME --type bearer --field token=-`")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tSET\tCHAINS\tHOSTS\tLAST USED")
	for _, c := range list {
		pub := make([]string, 0, len(c.Public))
		for k, val := range c.Public {
			pub = append(pub, k+"="+val)
		}
		sort.Strings(pub)
		set := append(pub, c.Set...)
		chains := "all"
		if len(c.Chains) > 0 {
			chains = strings.Join(c.Chains, ",")
		}
		used := "never"
		if !c.LastUsed.IsZero() {
			used = c.LastUsed.Format("2006-01-02 15:04 MST")
		}
		if c.Unreadable != "" {
			fmt.Fprintf(tw, "%s\t%s\tcannot be read: %s\t%s\t-\t%s\n", c.Name, c.Type, c.Unreadable, chains, used)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Type, strings.Join(set, " "), chains, hostsCell(c), used)
	}
	return tw.Flush()
}

// defaultHostsOf is where c goes while it has no hosts of its own.
func defaultHostsOf(c store.Credential) []string {
	typ, ok := credential.Lookup(c.Type)
	if !ok {
		return nil
	}
	values := credential.Values{}
	for k, v := range c.Public {
		values[k] = v
	}
	return typ.DefaultHosts(values)
}

// hostsCell is the list's HOSTS column.
func hostsCell(c store.Credential) string {
	if len(c.Hosts) > 0 {
		return strings.Join(c.Hosts, ",")
	}
	if d := defaultHostsOf(c); len(d) > 0 {
		return strings.Join(d, ",") + " (default)"
	}
	return "none: unusable"
}

// hostsText says where c may be sent, after a save.
func hostsText(c store.Credential) string {
	if len(c.Hosts) > 0 {
		return "sent only to " + strings.Join(c.Hosts, ", ")
	}
	if d := defaultHostsOf(c); len(d) > 0 {
		return "sent only to " + strings.Join(d, ", ") + " (its type's default)"
	}
	return "no allowed hosts: it is sent nowhere until you set them (--host)"
}

// rotateKey re-seals every credential under a new key in one transaction.
// With a key file, the new key is written to FILE.new first and renamed over
// FILE after the commit (a studio started in between finishes the rename);
// a key from the environment is printed, to be set in its place.
func rotateKey(ctx context.Context, v *vault.Vault, src keySource, stdout io.Writer) error {
	if !v.Enabled() {
		return vault.ErrNoKey
	}
	next, text, err := seal.Generate()
	if err != nil {
		return err
	}
	if src.path != "" {
		if err := seal.WriteFile(src.path+".new", text); err != nil {
			return err
		}
	}
	if err := v.Rotate(ctx, next); err != nil {
		if src.path != "" {
			os.Remove(src.path + ".new")
		}
		return err
	}
	if src.path != "" {
		if err := os.Rename(src.path+".new", src.path); err != nil {
			return fmt.Errorf("the credentials are sealed under the new key in %s.new, but it could not replace %s: %w (rename it by hand)", src.path, src.path, err)
		}
		fmt.Fprintf(stdout, "rotated: every credential is sealed under the new key in %s; back it up with the database\n", src.path)
		return nil
	}
	fmt.Fprintf(stdout, "rotated: set %s to the new key before the next start:\n%s\n", keyEnv, text)
	return nil
}
