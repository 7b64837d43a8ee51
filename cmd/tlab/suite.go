package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tlab/internal/results"
	"tlab/scenarios"
)

// suiteFile records in a suite's run directory what it runs, so that
// tlab run --resume DIR continues every part.
const suiteFile = "suite.json"

type suiteRecord struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Parts       []string `json:"parts"`
	Sets        []string `json:"sets,omitempty"`
}

// runSuite runs a suite's parts one after the other, each into DIR/PART
// (a run directory of its own, with its report), and writes DIR/index.html
// linking them. A part already complete is skipped, an interrupted one
// resumed.
func runSuite(ctx context.Context, o runOptions, rec suiteRecord, args []string, stdout, stderr io.Writer) int {
	if o.shard != "" {
		fmt.Fprintln(stderr, "tlab run: --shard applies to one scenario; run each part of the suite with its own --shard")
		return exitUsage
	}
	if o.out == "" {
		o.out = filepath.Join("results", rec.Name+"-"+time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return errorExit(stderr, err)
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	if err := results.WriteFileAtomic(filepath.Join(o.out, suiteFile), b); err != nil {
		return errorExit(stderr, err)
	}
	fmt.Fprintf(stderr, "%s: a suite of %d scenarios (%v), into %s\n", rec.Name, len(rec.Parts), rec.Parts, o.out)
	code := exitOK
	asJSON := map[string]json.RawMessage{}
	for i, part := range rec.Parts {
		po := o
		po.out = filepath.Join(o.out, partDir(part))
		po.nameOrFile, po.resume = part, ""
		if _, err := os.Stat(filepath.Join(po.out, results.ManifestFile)); err == nil {
			po.nameOrFile, po.resume, po.sets = "", po.out, nil
		}
		fmt.Fprintf(stderr, "\n== part %d of %d: %s ==\n", i+1, len(rec.Parts), part)
		var buf bytes.Buffer
		w := stdout
		if o.asJSON {
			w = &buf
		}
		c := runScenario(ctx, po, args, w, stderr)
		if o.asJSON && buf.Len() > 0 {
			asJSON[partDir(part)] = json.RawMessage(bytes.TrimSpace(buf.Bytes()))
		}
		if c == exitCanceled {
			fmt.Fprintf(stderr, "tlab run: the suite stopped in part %s. Continue the whole suite with: tlab run --resume %s\n", part, o.out)
			return c
		}
		if c != exitOK && code == exitOK {
			code = c
		}
	}
	if err := writeSuiteIndex(o.out, rec); err != nil {
		return errorExit(stderr, err)
	}
	if o.asJSON {
		if c := writeJSON(stdout, asJSON); c != exitOK {
			return c
		}
	} else {
		fmt.Fprintf(stdout, "\nSuite %s: one run directory per part in %s; index.html links their reports.\n", rec.Name, o.out)
	}
	return code
}

// resumeSuite continues the suite whose run directory is dir, when it is
// one.
func resumeSuite(ctx context.Context, o runOptions, args []string, stdout, stderr io.Writer) (int, bool) {
	b, err := os.ReadFile(filepath.Join(o.resume, suiteFile))
	if err != nil {
		return 0, false
	}
	var rec suiteRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		fmt.Fprintf(stderr, "tlab run: %s: %v\n", filepath.Join(o.resume, suiteFile), err)
		return exitUsage, true
	}
	o.out, o.resume, o.sets = o.resume, "", rec.Sets
	return runSuite(ctx, o, rec, args, stdout, stderr), true
}

// suiteFor returns the named preset or file as a suite record, when it is
// one. A suite file's parts are presets or scenario files, the latter
// relative to the suite file; the record holds their absolute paths, so a
// resume finds them from anywhere.
func suiteFor(name string, sets []string) (suiteRecord, bool, error) {
	s, ok, err := readSuite(name)
	if !ok || err != nil {
		return suiteRecord{}, ok, err
	}
	parts := s.Parts
	if isFile(name) {
		parts = nil
		for _, p := range s.Parts {
			parts = append(parts, partPath(name, p))
		}
	}
	dirs := map[string]string{}
	for _, p := range parts {
		if other, dup := dirs[partDir(p)]; dup {
			return suiteRecord{}, true, fmt.Errorf("%s: parts %s and %s would both run into %s", name, other, p, partDir(p))
		}
		dirs[partDir(p)] = p
	}
	return suiteRecord{Name: s.Name, Description: s.Description, Parts: parts, Sets: sets}, true, nil
}

// readSuite reads a preset or a scenario file as a suite, when it is one.
func readSuite(name string) (scenarios.Suite, bool, error) {
	if !isFile(name) {
		return scenarios.ReadSuite(name)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return scenarios.Suite{}, false, nil // not readable: not a suite (loading it will say why)
	}
	return scenarios.ParseSuite(name, data, func(p string) (bool, bool) {
		path := partPath(name, p)
		if !isFile(path) {
			_, exists := scenarios.Read(p)
			_, isSuite, _ := scenarios.ReadSuite(p)
			return exists, isSuite
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return false, false
		}
		_, isSuite, _ := scenarios.ParseSuite(path, b, func(string) (bool, bool) { return true, false })
		return true, isSuite
	})
}

// isFile tells whether name names a file rather than a preset (as
// loadScenario decides).
func isFile(name string) bool {
	_, err := os.Stat(name)
	return err == nil || strings.ContainsAny(name, "/.")
}

// partPath resolves a suite file's part: a preset name as it is, a file
// relative to the suite file, made absolute.
func partPath(suiteFile, part string) string {
	if !strings.ContainsAny(part, "/.") {
		return part
	}
	if !filepath.IsAbs(part) {
		part = filepath.Join(filepath.Dir(suiteFile), part)
	}
	if abs, err := filepath.Abs(part); err == nil {
		return abs
	}
	return part
}

var suiteIndex = template.Must(template.New("index").Funcs(template.FuncMap{"partDir": partDir}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Name}}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:50em;margin:2em auto;padding:0 1em}li{margin:.4em 0}</style></head>
<body><h1>{{.Name}}</h1>{{if .Description}}<p>{{.Description}}</p>{{end}}
<p>A suite of scenarios, each run into a directory of its own:</p>
<ul>{{range .Parts}}<li><a href="{{partDir .}}/report.html">{{partDir .}}</a></li>{{end}}</ul>
</body></html>
`))

func writeSuiteIndex(dir string, rec suiteRecord) error {
	var b bytes.Buffer
	if err := suiteIndex.Execute(&b, rec); err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(dir, "index.html"), b.Bytes())
}

// partDir is the subdirectory a part runs into: a preset's name, or a
// scenario file's name without its extension.
func partDir(part string) string {
	return strings.TrimSuffix(filepath.Base(part), filepath.Ext(part))
}
