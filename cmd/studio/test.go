package main

import (
	"context"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chaintest"
)

// maxTestFiles bounds the chain files one `studio test DIR` reads.
const maxTestFiles = 10_000

// fileReport is one chain file's tests, or why the file could not be read.
type fileReport struct {
	File  string `json:"file"`
	Error string `json:"error,omitempty"`
	*chaintest.Report
}

func cmdTest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	codeOpts := registerCode(fs)
	asJSON := fs.Bool("json", false, "print the results as one JSON object")
	junit := fs.String("junit", "", "also write the results as JUnit XML to `FILE` (for CI)")
	fs.Usage = func() {
		printUsage(fs, "studio test FILE|DIR [--json] [--junit FILE]",
			"Runs the tests kept in a chain file (its \"tests\"), or in every *.json chain file of DIR.\n"+
				"Mocked nodes give their mock; only pure tools (echo, transform, template) and code nodes\n"+
				"(in the sandbox) run, and any other\n"+
				"tool, proc, sub-chain or agent a test reaches without a mock fails the test: no network, no\n"+
				"process, no file. Exit status 1 when any test fails or a file does not decode, 2 on a usage error.")
	}
	args, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, args, "FILE|DIR") {
		return exitUsage
	}
	files, err := testFiles(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "studio test: %v\n", err)
		return exitUsage
	}
	if err := codeOpts.check(); err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	codeRunner, closeCode, err := codeOpts.runner(false)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	defer closeCode()
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{Code: codeRunner}))
	reg.SetScoped(builtin.Scoped...)
	reg.SetContained(builtin.Contained...)
	for n, c := range builtin.Checks(builtin.Options{}) {
		reg.SetCheck(n, c)
	}
	reg.SetInline(builtin.Inline...)
	for _, t := range builtin.Catalog() { // forms, GET /v1/tools, the input_schema rule
		reg.SetInputSchema(t.Name, t.InputSchema)
		reg.SetDescription(t.Name, t.Description)
	}
	for n, s := range builtin.OutputSchemas() {
		reg.SetOutputSchema(n, s)
	}
	var reports []fileReport
	failed := false
	for _, f := range files {
		fr := fileReport{File: f}
		c, err := loadChain(f)
		if err != nil {
			fr.Error = err.Error()
			failed = true
		} else if fr.Report, err = chaintest.Run(ctx, c, chaintest.Options{Registry: reg}); err != nil {
			fr.Error = err.Error()
			failed = true
		} else if fr.Failed > 0 {
			failed = true
		}
		reports = append(reports, fr)
	}
	if *junit != "" {
		if err := writeJUnit(*junit, reports); err != nil {
			fmt.Fprintf(stderr, "--junit: %v\n", err)
			return exitFailed
		}
	}
	if *asJSON {
		writeJSON(stdout, testSummary(reports))
	} else {
		printTests(stdout, reports)
	}
	if failed {
		return exitFailed
	}
	return exitOK
}

// testFiles is FILE, or DIR's *.json files sorted.
func testFiles(arg string) ([]string, error) {
	st, err := os.Stat(arg)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{arg}, nil
	}
	files, err := filepath.Glob(filepath.Join(arg, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s has no *.json chain files", arg)
	}
	if len(files) > maxTestFiles {
		return nil, fmt.Errorf("%s has %d *.json files, over the limit of %d", arg, len(files), maxTestFiles)
	}
	sort.Strings(files)
	return files, nil
}

type testTotals struct {
	Files  []fileReport `json:"files"`
	Total  int          `json:"total"`
	Passed int          `json:"passed"`
	Failed int          `json:"failed"`
	Errors int          `json:"errors"` // files that could not be tested
}

func testSummary(reports []fileReport) testTotals {
	t := testTotals{Files: reports}
	for _, r := range reports {
		if r.Error != "" {
			t.Errors++
			continue
		}
		t.Total += r.Total
		t.Passed += r.Passed
		t.Failed += r.Failed
	}
	return t
}

func printTests(w io.Writer, reports []fileReport) {
	for _, r := range reports {
		if r.Error != "" {
			fmt.Fprintf(w, "%s: %s\n", r.File, r.Error)
			continue
		}
		if r.Total == 0 {
			fmt.Fprintf(w, "%s: no tests\n", r.File)
			continue
		}
		for _, t := range r.Tests {
			mark := "ok  "
			if !t.Passed {
				mark = "FAIL"
			}
			fmt.Fprintf(w, "%s %s: %s (%.1f ms)\n", mark, r.File, t.Name, t.DurationMS)
			for _, f := range t.Failures {
				where := f.Field
				if f.Node != "" {
					where += " (node " + f.Node + ")"
				}
				fmt.Fprintf(w, "     %s: %s\n", where, f.Message)
			}
		}
	}
	s := testSummary(reports)
	fmt.Fprintf(w, "%d passed, %d failed", s.Passed, s.Failed)
	if s.Errors > 0 {
		fmt.Fprintf(w, ", %d file(s) not tested", s.Errors)
	}
	fmt.Fprintln(w)
}

// JUnit XML, the form CI servers read: one suite per chain file.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func writeJUnit(path string, reports []fileReport) error {
	var out junitSuites
	for _, r := range reports {
		s := junitSuite{Name: r.File}
		if r.Error != "" {
			s.Errors, s.Tests = 1, 1
			s.Cases = []junitCase{{Name: "decode", ClassName: r.File, Time: "0", Error: &junitFailure{Message: r.Error, Type: "error", Text: r.Error}}}
		} else {
			s.Time = seconds(r.DurationMS)
			for _, t := range r.Tests {
				jc := junitCase{Name: t.Name, ClassName: r.File + ": " + r.Chain, Time: seconds(t.DurationMS)}
				if !t.Passed {
					var lines []string
					for _, f := range t.Failures {
						line := f.Field + ": " + f.Message
						if f.Node != "" {
							line = "node " + f.Node + ": " + line
						}
						lines = append(lines, line)
					}
					jc.Failure = &junitFailure{Message: t.Failures[0].Message, Type: t.Failures[0].Kind, Text: strings.Join(lines, "\n")}
					s.Failures++
				}
				s.Cases = append(s.Cases, jc)
				s.Tests++
			}
		}
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Suites = append(out.Suites, s)
	}
	b, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	b = append([]byte(xml.Header), append(b, '\n')...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func seconds(ms float64) string { return fmt.Sprintf("%.3f", ms/1000) }
