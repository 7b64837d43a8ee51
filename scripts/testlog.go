//go:build ignore

// Testlog reads the suite's go test -json logs for scripts/test.
//
//	go run scripts/testlog.go print < LOG.json      the output go test prints without -v
//	go run scripts/testlog.go slowest N LOG.json...  each package's time and the N slowest tests
//
// (Not part of the module's packages: a build constraint keeps it out of
// ./..., and go run builds it from this one file.)
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// event is one line of go test -json (cmd/test2json's TestEvent).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "print":
		if err := printOutput(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "testlog print:", err)
			os.Exit(1)
		}
	case "slowest":
		if len(os.Args) < 4 {
			usage()
		}
		n, err := strconv.Atoi(os.Args[2])
		if err != nil || n < 1 {
			usage()
		}
		if err := slowest(n, os.Args[3:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "testlog slowest:", err)
			os.Exit(1)
		}
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: go run scripts/testlog.go print < LOG.json | slowest N LOG.json...")
	os.Exit(2)
}

// printOutput writes the log as go test prints without -v: a test's
// output only when it fails (with -json go test reports every test), the
// packages' own lines as they come. A line that is not an event (the go
// command's own build errors) is written as it is.
func printOutput(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	out := bufio.NewWriter(w)
	held := map[string]*strings.Builder{} // package and test → its output so far
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			out.Write(sc.Bytes())
			out.WriteByte('\n')
			out.Flush()
			continue
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Test == "" && e.Action == "output":
			out.WriteString(e.Output)
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			// A package that ends with tests unfinished (a panic, its
			// -timeout) shows what they printed.
			for k, b := range held {
				if strings.HasPrefix(k, e.Package+" ") {
					out.WriteString(b.String())
					delete(held, k)
				}
			}
		case e.Action == "output":
			if held[key] == nil {
				held[key] = &strings.Builder{}
			}
			held[key].WriteString(e.Output)
		case e.Action == "fail":
			if b := held[key]; b != nil {
				out.WriteString(b.String())
			}
			delete(held, key)
		case e.Action == "pass" || e.Action == "skip":
			delete(held, key)
		}
		if e.Action != "output" || strings.HasSuffix(e.Output, "\n") {
			out.Flush()
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	return sc.Err()
}

// result is one finished test or package.
type result struct {
	name    string
	action  string
	elapsed float64
}

// slowest prints every package's time and the n slowest top-level tests
// of the logs.
func slowest(n int, logs []string, w io.Writer) error {
	var tests, pkgs []result
	// A test's time is from its first event to its end: go test's own
	// Elapsed for a test whose subtests run in parallel leaves them out.
	began := map[string]time.Time{}
	for _, name := range logs {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			key := e.Package + " " + e.Test
			if _, ok := began[key]; !ok {
				began[key] = e.Time
			}
			if e.Action != "pass" && e.Action != "fail" && e.Action != "skip" {
				continue
			}
			switch {
			case e.Test == "":
				pkgs = append(pkgs, result{e.Package, e.Action, e.Elapsed})
			case !strings.Contains(e.Test, "/"):
				wall := e.Time.Sub(began[key]).Seconds()
				tests = append(tests, result{key, e.Action, max(e.Elapsed, wall)})
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	bySlowest := func(a, b result) int { return cmp.Compare(b.elapsed, a.elapsed) }
	slices.SortStableFunc(pkgs, bySlowest)
	slices.SortStableFunc(tests, bySlowest)
	total := 0.0
	fmt.Fprintln(w, "packages (test binaries' own time, slowest first):")
	for _, p := range pkgs {
		total += p.elapsed
		fmt.Fprintf(w, "%8.1f s  %-4s %s\n", p.elapsed, p.action, p.name)
	}
	fmt.Fprintf(w, "%8.1f s  in all (%d packages)\n", total, len(pkgs))
	fmt.Fprintf(w, "the %d slowest tests:\n", min(n, len(tests)))
	for _, t := range tests[:min(n, len(tests))] {
		fmt.Fprintf(w, "%8.1f s  %-4s %s\n", t.elapsed, t.action, t.name)
	}
	return nil
}
