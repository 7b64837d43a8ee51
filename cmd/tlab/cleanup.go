package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"tlab/internal/testbed"
)

func runCleanup(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("cleanup", "cleanup [--dry-run] [--json]\n\nRemove what killed runs left behind: the processes they started, the nftables tables they\nadded to reach a real path, their temporary directories and registry records. Only runs\nwhose tlab process is gone are touched; live runs are left alone.", stderr)
	dry := fs.Bool("dry-run", false, "list what would be removed, remove nothing")
	asJSON := fs.Bool("json", false, "print the actions as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	actions, err := testbed.Cleanup(*dry)
	if err != nil {
		return errorExit(stderr, err)
	}
	failed := false
	for _, a := range actions {
		if a.Error != "" {
			failed = true
		}
	}
	if *asJSON {
		if actions == nil {
			actions = []testbed.CleanupAction{}
		}
		json.NewEncoder(stdout).Encode(actions)
	} else if len(actions) == 0 {
		fmt.Fprintln(stdout, "Nothing to clean up: no run left anything behind.")
	} else {
		for _, a := range actions {
			state := "done"
			switch {
			case a.Error != "":
				state = "FAILED: " + a.Error
			case *dry:
				state = "would do"
			}
			fmt.Fprintf(stdout, "run %s: %s (%s)\n", a.Run, a.What, state)
		}
	}
	if failed {
		return exitFailure
	}
	return exitOK
}
