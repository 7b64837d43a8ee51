package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"tlab/internal/cellrun"

	"tlab/internal/advise"
	"tlab/internal/plan"
	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/units"
	"tlab/scenarios"
)

// SuiteFile records in a suite's run directory what it runs, so that
// tlab run --resume DIR continues every part.
const SuiteFile = "suite.json"

// SuiteRecord is a suite as it runs: its parts (presets, or scenario files
// by absolute path) and the --set overrides every part gets.
type SuiteRecord struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Parts       []string `json:"parts"`
	Sets        []string `json:"sets,omitempty"`
	// Quality and Requirements are the run's options that a part begun
	// only after a resume must still follow (a part begun before keeps
	// its own in its manifest).
	Quality      string   `json:"quality,omitempty"`
	Requirements []string `json:"requirements,omitempty"`
}

// Options settles a suite's quality rule and requirements: those given on
// this command line, which the record then keeps, or else the record's
// (a resume given none continues as the suite began).
func (r *SuiteRecord) Options(quality string, require []advise.Requirement) (string, []advise.Requirement, error) {
	if quality != "" {
		r.Quality = quality
	}
	if len(require) > 0 {
		r.Requirements = nil
		for _, q := range require {
			r.Requirements = append(r.Requirements, q.String())
		}
		return r.Quality, require, nil
	}
	kept, err := advise.ParseAll(r.Requirements)
	if err != nil {
		return "", nil, cellrun.InputErr(fmt.Errorf("%s: requirements: %w", SuiteFile, err))
	}
	return r.Quality, kept, nil
}

// Suite runs a suite's parts one after the other, each into DIR/PART (a
// run directory of its own, with its report), and writes DIR/index.html
// linking them. A part already complete is skipped by its own resume, an
// interrupted one resumed.
type Suite struct {
	Record SuiteRecord
	// Dir is the suite's directory (DefaultDir when empty).
	Dir string
	Log io.Writer
	Now func() time.Time
}

// ErrSuiteInterrupted is returned, wrapping context.Canceled, when a part
// was interrupted: the whole suite continues with a resume of its
// directory.
type ErrSuiteInterrupted struct {
	Part, Dir string
	Err       error
}

func (e *ErrSuiteInterrupted) Error() string {
	return fmt.Sprintf("the suite stopped in part %s. Continue the whole suite with: tlab run --resume %s", e.Part, e.Dir)
}

func (e *ErrSuiteInterrupted) Unwrap() error { return e.Err }

// Execute runs every part through runPart, which gets the part's Run (base
// with the part's scenario and directory, or a resume of it) and runs it
// (printing as it likes). An error from runPart that wraps context.Canceled
// stops the suite with ErrSuiteInterrupted; other errors are the part's
// own, and the suite goes on. It returns the suite's directory.
func (s Suite) Execute(base Run, runPart func(part string, r Run) error) (string, error) {
	if base.Shard != "" {
		return "", cellrun.InputErr(errors.New("--shard applies to one scenario; run each part of the suite with its own --shard"))
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Dir == "" {
		s.Dir = DefaultDir(s.Record.Name, s.Now())
	}
	if err := results.PrepareOut(s.Dir); err != nil {
		return s.Dir, err
	}
	b, _ := json.MarshalIndent(s.Record, "", "  ")
	if err := results.WriteFileAtomic(filepath.Join(s.Dir, SuiteFile), b); err != nil {
		return s.Dir, err
	}
	if s.Log != nil {
		fmt.Fprintf(s.Log, "%s: a suite of %s (%v), into %s\n", s.Record.Name, units.Count(len(s.Record.Parts), "scenario"), s.Record.Parts, s.Dir)
	}
	for i, part := range s.Record.Parts {
		r := s.partRun(base, part)
		if s.Log != nil {
			fmt.Fprintf(s.Log, "\n== part %d of %d: %s ==\n", i+1, len(s.Record.Parts), part)
		}
		if err := runPart(part, r); errors.Is(err, context.Canceled) {
			return s.Dir, &ErrSuiteInterrupted{Part: part, Dir: s.Dir, Err: err}
		}
	}
	return s.Dir, writeSuiteIndex(s.Dir, s.Record)
}

// partRun is base made the run of one part: into DIR/PART, the part's
// scenario with the suite's overrides, or a resume of the part's
// directory when it holds a run.
func (s Suite) partRun(base Run, part string) Run {
	r := base
	r.NameOrFile, r.Resume, r.Sets, r.Scenario = part, "", s.Record.Sets, nil
	if s.Dir == "" {
		return r // a new suite: nothing to resume yet
	}
	r.Out = filepath.Join(s.Dir, PartDir(part))
	if _, err := os.Stat(filepath.Join(r.Out, results.ManifestFile)); err == nil {
		r.NameOrFile, r.Resume, r.Sets = "", r.Out, nil
	}
	return r
}

// Testbed says whether some part of the suite, run from base (its
// remote target and replay), builds a testbed on this machine, by the
// rule each run applies to its own cells (buildsTestbed): the command
// line checks privileges once, before the first part, when one does. A
// part whose scenario does not load counts as one; it fails on its own
// when its turn comes.
func (s Suite) Testbed(base Run) bool {
	for _, part := range s.Record.Parts {
		sc, _, err := s.partRun(base, part).scenario()
		if err != nil {
			return true
		}
		cells, err := plan.Compile(sc)
		if err != nil || buildsTestbed(sc, cells) {
			return true
		}
	}
	return false
}

// buildsTestbed says whether a run of sc's cells builds a testbed here:
// a cell at no site runs on one, and an emulated link in front of a
// site (the scenario's link overrides on a real path) is one too. A run
// whose every cell crosses a real path, as it is, builds nothing.
func buildsTestbed(sc *scenario.Scenario, cells []plan.Cell) bool {
	return sc.LinkOverrides() != "" || slices.ContainsFunc(cells, func(c plan.Cell) bool { return c.Site == "" })
}

// ResumeSuite reads the suite whose run directory is dir, when it is one.
func ResumeSuite(dir string) (Suite, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, SuiteFile))
	if err != nil {
		return Suite{}, false, nil
	}
	var rec SuiteRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return Suite{}, true, cellrun.InputErr(fmt.Errorf("%s: %w", filepath.Join(dir, SuiteFile), err))
	}
	return Suite{Record: rec, Dir: dir}, true, nil
}

// SuiteFor returns the named preset or file as a suite record, when it is
// one. A suite file's parts are presets or scenario files, the latter
// relative to the suite file; the record holds their absolute paths, so a
// resume finds them from anywhere.
func SuiteFor(name string, sets []string) (SuiteRecord, bool, error) {
	s, ok, err := ReadSuite(name)
	if !ok || err != nil {
		return SuiteRecord{}, ok, err
	}
	parts := s.Parts
	if IsFile(name) {
		parts = nil
		for _, p := range s.Parts {
			parts = append(parts, partPath(name, p))
		}
	}
	dirs := map[string]string{}
	for _, p := range parts {
		if other, dup := dirs[PartDir(p)]; dup {
			return SuiteRecord{}, true, fmt.Errorf("%s: parts %s and %s would both run into %s", name, other, p, PartDir(p))
		}
		dirs[PartDir(p)] = p
	}
	return SuiteRecord{Name: s.Name, Description: s.Description, Parts: parts, Sets: sets}, true, nil
}

// ReadSuite reads a preset or a scenario file as a suite, when it is one.
func ReadSuite(name string) (scenarios.Suite, bool, error) {
	if !IsFile(name) {
		return scenarios.ReadSuite(name)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return scenarios.Suite{}, false, nil // not readable: not a suite (loading it will say why)
	}
	return scenarios.ParseSuite(name, data, func(p string) (bool, bool) {
		path := partPath(name, p)
		if !IsFile(path) {
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

var suiteIndex = template.Must(template.New("index").Funcs(template.FuncMap{"partDir": PartDir}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Name}}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:50em;margin:2em auto;padding:0 1em}li{margin:.4em 0}</style></head>
<body><h1>{{.Name}}</h1>{{if .Description}}<p>{{.Description}}</p>{{end}}
<p>A suite of scenarios, each run into a directory of its own:</p>
<ul>{{range .Parts}}<li><a href="{{partDir .}}/report.html">{{partDir .}}</a></li>{{end}}</ul>
</body></html>
`))

func writeSuiteIndex(dir string, rec SuiteRecord) error {
	var b bytes.Buffer
	if err := suiteIndex.Execute(&b, rec); err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(dir, "index.html"), b.Bytes())
}

// PartDir is the subdirectory a part runs into: a preset's name, or a
// scenario file's name without its extension.
func PartDir(part string) string {
	return strings.TrimSuffix(filepath.Base(part), filepath.Ext(part))
}
