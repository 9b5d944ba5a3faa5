package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"
)

// parseArgs parses flags and positional arguments in any order, the way
// people type them (`studio run FILE --input X --json`): Go's flag package
// alone stops at the first non-flag. `--` ends the flags; `-h`/`--help`
// anywhere prints the usage. It returns the positional arguments, or the
// exit status when parsing ends the command (0 after help, 2 on a usage
// error, with the message and usage printed on fs.Output()).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, int, bool) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a) // "-" alone is an argument (stdin by convention)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil || isBoolFlag(f) {
			continue // unknown flags are reported by fs.Parse below
		}
		if i+1 == len(args) {
			fmt.Fprintf(fs.Output(), "flag needs an argument: --%s\n", name)
			fs.Usage()
			return nil, exitUsage, false
		}
		i++
		flags = append(flags, args[i])
	}
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK, false
		}
		return nil, exitUsage, false
	}
	return pos, 0, true
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// printUsage writes the synopsis, the description and the flags, spelled
// with two dashes as the README and help texts use them.
func printUsage(fs *flag.FlagSet, synopsis, description string) {
	w := fs.Output()
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", synopsis, description)
	var any bool
	fs.VisitAll(func(*flag.Flag) { any = true })
	if !any {
		return
	}
	fmt.Fprintln(w, "\nFlags (before or after the arguments; -- ends the flags):")
	fs.VisitAll(func(f *flag.Flag) { printFlag(w, f) })
}

func printFlag(w io.Writer, f *flag.Flag) {
	arg, usage := flag.UnquoteUsage(f)
	line := "  --" + f.Name
	if len(f.Name) == 1 {
		line = "  -" + f.Name
	}
	if arg != "" && !isBoolFlag(f) {
		line += " " + strings.ToUpper(arg)
	}
	def := f.DefValue
	if def != "" && def != "false" && def != "0" {
		usage += " (default " + def + ")"
	}
	fmt.Fprintf(w, "%s\n      %s\n", line, usage)
}

// wantArgs checks the number of positional arguments, naming what is wrong.
func wantArgs(fs *flag.FlagSet, args []string, names ...string) bool {
	if len(args) == len(names) {
		return true
	}
	switch {
	case len(args) < len(names):
		fmt.Fprintf(fs.Output(), "studio %s: missing %s\n\n", fs.Name(), strings.Join(names[len(args):], " "))
	case len(names) == 0:
		fmt.Fprintf(fs.Output(), "studio %s takes no arguments, got %q\n\n", fs.Name(), args)
	default:
		fmt.Fprintf(fs.Output(), "studio %s takes one %s, got %d arguments: %q\n\n", fs.Name(), names[0], len(args), args)
	}
	fs.Usage()
	return false
}

// prefixListFlag collects --trusted-proxy ranges: a CIDR (10.0.0.0/8,
// fd00::/8) or one address (a /32 or /128), refused at start when it is
// neither, so that a typo never silently trusts nothing (or everything).
type prefixListFlag []netip.Prefix

func (l *prefixListFlag) String() string {
	s := make([]string, len(*l))
	for i, p := range *l {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func (l *prefixListFlag) Set(v string) error {
	p, err := netip.ParsePrefix(v)
	if err != nil {
		ip, ierr := netip.ParseAddr(v)
		if ierr != nil {
			return fmt.Errorf("%q is not a CIDR range (10.0.0.0/8) or an address", v)
		}
		p = netip.PrefixFrom(ip, ip.BitLen())
	}
	if p.Bits() == 0 {
		return fmt.Errorf("%q trusts every address: name the proxies' range", v)
	}
	*l = append(*l, p.Masked())
	return nil
}
