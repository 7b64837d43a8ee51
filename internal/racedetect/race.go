//go:build race

package racedetect

// Enabled is true: the binary was built with -race.
const Enabled = true
