package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeSkips are the README shell lines that do not call the studio, each
// with why the test does not run it. Any other line must call the studio.
var readmeSkips = map[string]string{
	"make test":                       "it runs this test: running it from here would recurse",
	"go build -o studio ./cmd/studio": "the test builds the binary itself, into a temporary folder",
}

// readmeLine is one shell line of a README code block.
type readmeLine struct {
	n       int    // line number in README.md
	text    string // the line as written
	words   []string
	comment string
}

var exitsRE = regexp.MustCompile(`\bexits (\d+)\b`)

// readmeShellLines returns the lines of README.md's sh code blocks.
func readmeShellLines(t *testing.T, path string) []readmeLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []readmeLine
	inSh, inOther := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```") && !inSh && !inOther:
			lang := strings.TrimPrefix(trimmed, "```")
			inSh = lang == "sh" || lang == "bash" || lang == "shell"
			inOther = !inSh
		case strings.HasPrefix(trimmed, "```"):
			inSh, inOther = false, false
		case inSh && trimmed != "" && !strings.HasPrefix(trimmed, "#"):
			words, comment, err := shellWords(trimmed)
			if err != nil {
				t.Fatalf("README.md:%d: %v: %s", n, err, line)
			}
			lines = append(lines, readmeLine{n: n, text: trimmed, words: words, comment: comment})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// shellWords splits a line the way sh does for the simple commands a README
// shows: single and double quotes, backslashes, a trailing # comment. It
// refuses what it cannot run faithfully (pipes, redirections, expansions).
func shellWords(s string) (words []string, comment string, err error) {
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words, strings.TrimSpace(s[i+1:]), nil
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, "", fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				switch s[i] {
				case '\\':
					if i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
						i++
					}
				case '$', '`':
					return nil, "", fmt.Errorf("expansions inside double quotes are not supported")
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, "", fmt.Errorf("unterminated double quote")
			}
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
			inWord = true
		case strings.IndexByte("|&;<>()$`*?[", c) >= 0:
			return nil, "", fmt.Errorf("%q is not supported by the README test", c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, "", nil
}

func TestShellWords(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		words   []string
		comment string
		bad     bool
	}{
		{in: `studio run f.json --input '{"a":[1,2]}'   # ok: exits 3`, words: []string{"studio", "run", "f.json", "--input", `{"a":[1,2]}`}, comment: "ok: exits 3"},
		{in: `go run ./cmd/studio help`, words: []string{"go", "run", "./cmd/studio", "help"}},
		{in: `studio run "a b.json" --answer "{\"x\":1}"`, words: []string{"studio", "run", "a b.json", "--answer", `{"x":1}`}},
		{in: `studio run a\ b.json x#y`, words: []string{"studio", "run", "a b.json", "x#y"}},
		{in: `studio run 'it''s'`, words: []string{"studio", "run", "its"}},
		{in: `studio a2e < req.ndjson`, bad: true},
		{in: `studio run "$HOME/x"`, bad: true},
		{in: `studio run 'open`, bad: true},
	}
	for _, tc := range cases {
		words, comment, err := shellWords(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%s: want an error, got %q", tc.in, words)
			}
			continue
		}
		if err != nil || strings.Join(words, "\x00") != strings.Join(tc.words, "\x00") || comment != tc.comment {
			t.Errorf("%s:\n got %q %q %v\nwant %q %q", tc.in, words, comment, err, tc.words, tc.comment)
		}
	}
}

// studioArgs returns the arguments after the command words of a line that
// calls the studio (go run ./cmd/studio, studio, ./studio), and whether it
// used go run.
func studioArgs(words []string) (args []string, goRun, ok bool) {
	switch {
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && (words[2] == "./cmd/studio" || words[2] == "github.com/chainstudio/studio/cmd/studio"):
		return words[3:], true, true
	case len(words) >= 1 && (words[0] == "studio" || words[0] == "./studio"):
		return words[1:], false, true
	}
	return nil, false, false
}

// Every shell line of README.md that calls the studio runs against a built
// binary, from the repository root, with the exit status the README
// promises: 0, or N where the line's comment says "exits N". The line that
// starts the studio is started on a free port with a temporary database,
// probed at /healthz and stopped with SIGTERM.
func TestReadmeCommands(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the studio binary and runs every README command (make test runs it)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	lines := readmeShellLines(t, filepath.Join(root, "README.md"))
	if len(lines) < 10 {
		t.Fatalf("found %d shell lines in README.md; the code blocks moved?", len(lines))
	}
	tmp := t.TempDir()
	bin := builtStudio(t)
	// Nothing a README line does may touch the developer's database, port
	// or agents.
	env := append(os.Environ(), "STUDIO_DB="+filepath.Join(tmp, "studio.db"), "STUDIO_ADDR=127.0.0.1:0",
		"STUDIO_AGENTS="+filepath.Join(tmp, "agents"), "STUDIO_TOKEN=")
	served := 0
	for _, l := range lines {
		name := fmt.Sprintf("README.md:%d", l.n)
		if why, ok := readmeSkips[strings.Join(l.words, " ")]; ok {
			t.Logf("%s: skipped %q: %s", name, strings.Join(l.words, " "), why)
			continue
		}
		args, goRun, ok := studioArgs(l.words)
		if !ok {
			t.Errorf("%s: %q does not call the studio; run it here or add it to readmeSkips with the reason", name, l.text)
			continue
		}
		want := 0
		if m := exitsRE.FindStringSubmatch(l.comment); m != nil {
			want, _ = strconv.Atoi(m[1])
		}
		if goRun && want > 1 {
			t.Errorf("%s: a go run line cannot promise exit %d: go run reports every failure as 1; show it with the built binary", name, want)
		}
		if len(args) == 0 || args[0] == "serve" || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" {
			served++
			t.Run(name, func(t *testing.T) { readmeServe(t, bin, root, env, args) })
			continue
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir, cmd.Env = root, env
			out, err := cmd.CombinedOutput()
			code := cmd.ProcessState.ExitCode()
			if err != nil && code < 0 {
				t.Fatalf("%s: %v\n%s", l.text, err, out)
			}
			if code != want {
				t.Errorf("%s\nexit %d, the README promises %d:\n%s", l.text, code, want, out)
			}
			if strings.Contains(string(out), "panic") || strings.Contains(string(out), "goroutine ") {
				t.Errorf("%s: panicked:\n%s", l.text, out)
			}
		})
	}
	if served != 1 {
		t.Errorf("the README starts the studio on %d lines, want 1 (the first of its two commands)", served)
	}
}

// readmeServe starts the studio as the README does, on a free loopback port
// and a temporary database, checks /healthz and stops it with SIGTERM.
func readmeServe(t *testing.T, bin, root string, env, args []string) {
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = root, env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			<-done
		}
	}()
	urls := make(chan string, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := runningRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		done <- cmd.Wait()
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		exited = true
		t.Fatalf("the studio exited before listening: %v\n%s", err, log.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the studio did not print its url within 30 s")
	}
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %d %s", resp.StatusCode, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Errorf("after SIGTERM the studio exited with %v:\n%s", err, log.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the studio did not stop within 20 s of SIGTERM")
	}
}
