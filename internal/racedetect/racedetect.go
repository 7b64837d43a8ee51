// Package racedetect tells tests whether the race detector is on. It
// slows every memory access several times over, so a test that bounds how
// long something takes widens its bound by Slowdown under it: the suite
// checks the time without the detector and the races with it.
package racedetect

// Slowdown is how much longer a test should allow for what it times:
// 1 without the race detector, 10 with it (the Go documentation's 2–20×).
func Slowdown() int {
	if Enabled {
		return 10
	}
	return 1
}
