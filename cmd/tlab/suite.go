package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"tlab/internal/cellrun"

	"tlab/internal/experiment"
)

// runSuite runs a suite's parts through experiment.Suite, printing each
// part's table as a run of its own (or, with --json, an object keyed by
// part); the exit code is the first failing part's.
func runSuite(ctx context.Context, o runOptions, suite experiment.Suite, args []string, stdout, stderr io.Writer) int {
	suite.Log = stderr
	var err error
	if o.quality, o.require, err = suite.Record.Options(o.quality, o.require); err != nil {
		fmt.Fprintf(stderr, "tlab run: %v\n", err)
		return exitUsage
	}
	// Privileges are checked once, before the first part, when a part
	// builds a testbed here (the suite decides, by each run's own rule):
	// without them the whole suite runs again in a user namespace (once,
	// not once per part into a new directory each time).
	base := experiment.Run{Shard: o.shard, Remote: o.remote, Replay: o.replay}
	if suite.Testbed(base) {
		if code, handled := ensurePrivileges(append([]string{"run"}, args...), stderr); handled {
			return code
		}
	}
	o.privilegesChecked = true
	code := exitOK
	asJSON := map[string]json.RawMessage{}
	dir, err := suite.Execute(base, func(part string, r experiment.Run) error {
		po := o
		po.nameOrFile, po.resume, po.sets, po.out, po.shard = r.NameOrFile, r.Resume, r.Sets, r.Out, ""
		var buf bytes.Buffer
		w := stdout
		if o.asJSON {
			w = &buf
		}
		c := runScenario(ctx, po, args, w, stderr)
		if o.asJSON && buf.Len() > 0 {
			asJSON[experiment.PartDir(part)] = json.RawMessage(bytes.TrimSpace(buf.Bytes()))
		}
		if c == exitCanceled {
			return context.Canceled
		}
		if c != exitOK && code == exitOK {
			code = c
		}
		return nil
	})
	switch {
	case errors.Is(err, cellrun.ErrInput):
		fmt.Fprintf(stderr, "tlab run: %v\n", err)
		return exitUsage
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "tlab run: %v\n", err)
		return exitCanceled
	case err != nil:
		return errorExit(stderr, err)
	}
	if o.asJSON {
		if c := writeJSON(stdout, asJSON); c != exitOK {
			return c
		}
	} else {
		fmt.Fprintf(stdout, "\nSuite %s: one run directory per part in %s; index.html links their reports.\n", suite.Record.Name, dir)
	}
	return code
}
