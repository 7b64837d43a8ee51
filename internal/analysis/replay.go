package analysis

import (
	"fmt"
	"slices"

	"tlab/internal/results"
	"tlab/internal/stats"
)

func init() {
	Register(Step{
		Name:    "replay",
		Doc:     "a remote run's real path against its recording, per protocol (medians and the record delay's 99th percentile)",
		Columns: []string{"delay_ms"},
		Files:   comparisonFiles(ReplayFile),
		Compute: func(v *View, a *Analysis) error {
			real, replay, ok := realAndReplay(v.Run)
			if !ok {
				return nil
			}
			var recs stats.Records
			if v.HasRecords() {
				recs = v.records()
			}
			var err error
			if a.Replay, err = stats.AgainstRecordingOver(v.Run, recs, real, replay, v.Seed); err != nil {
				return fmt.Errorf("replay against the path: %w", err)
			}
			return nil
		},
		Write: func(a *Analysis, dir string) ([]string, error) {
			if len(a.Replay) == 0 {
				return nil, nil
			}
			return comparisonFiles(ReplayFile), stats.WriteNamed(dir, ReplayFile, a.Replay)
		},
	})
}

// realAndReplay names the two networks of a remote run checked against
// its recording: the real path and the recording.
func realAndReplay(r *results.Run) (string, string, bool) {
	if r.Manifest == nil || r.Manifest.Remote == nil {
		return "", "", false
	}
	var nets []string
	for _, row := range r.Rows {
		if !slices.Contains(nets, row.Profile) {
			nets = append(nets, row.Profile)
		}
	}
	if len(nets) != 2 || !slices.Contains(nets, RealPath) {
		return "", "", false
	}
	if nets[0] == RealPath {
		return nets[0], nets[1], true
	}
	return nets[1], nets[0], true
}
