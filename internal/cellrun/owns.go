package cellrun

import "tlab/internal/workload"

// ownsItsStack says a workload runs commands that are their own stack
// (a scenario's stacks:, tlab shell's commands): no registered protocol
// is looked up for it.
func ownsItsStack(w workload.Workload) bool {
	_, owns := w.(interface{ OwnsItsStack() })
	_, cmd := w.(workload.Command)
	return owns || cmd
}
