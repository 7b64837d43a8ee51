package scenario

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tlab/internal/untrusted"
)

// hugeMatrix is 600-odd bytes of YAML whose matrix makes 1 profile x 1
// protocol x 1 repetition x 4^13 = 67 108 864 cells.
const hugeMatrix = `name: huge
profiles: [ethernet]
protocols: [tcp]
workload:
  type: periodic
  interval: 25ms
  payload: 256
count: 10
matrix:
  workload.interval: [1ms, 2ms, 3ms, 4ms]
  workload.payload: [1, 2, 3, 4]
  count: [1, 2, 3, 4]
  warmup: [0s, 1s, 2s, 3s]
  seed: [1, 2, 3, 4]
  description: [a, b, c, d]
  link.rate: [1Mbit, 2Mbit, 3Mbit, 4Mbit]
  link.delay: [1ms, 2ms, 3ms, 4ms]
  link.loss: [0%, 1%, 2%, 3%]
  link.jitter: [0ms, 1ms, 2ms, 3ms]
  link.queue: [codel, droptail, pie, fq_codel]
  link.queue_packets: [10, 20, 30, 40]
  workload.timeout: [1s, 2s, 3s, 4s]
`

// TestMatrixOfMillionsOfCellsIsRefused: the scenario above is refused at
// once (not after building 67 M cells), the error naming the product.
func TestMatrixOfMillionsOfCellsIsRefused(t *testing.T) {
	if len(hugeMatrix) > 700 {
		t.Fatalf("the scenario is %d bytes, meant to be about 600", len(hugeMatrix))
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := Parse("huge.yaml", []byte(hugeMatrix)) // tlab validate's step: it builds no cell
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "1 profiles x 1 protocols x 1 repetitions x 4 workload.interval") || !strings.Contains(err.Error(), "make 67108864 cells; a scenario may have at most 100000") {
			t.Fatalf("%v, want the product named and the cap", err)
		}
		t.Logf("refused in %v: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		t.Fatal("still expanding the matrix after 10 s")
	}
}

// TestCellCapCountsRepetitions: repetitions alone can pass the cap; the
// count of exactly MaxCells is allowed (2 profiles x 2 protocols x 25 000
// repetitions = 100 000), one repetition more is not, and Cells checks
// again what was changed after validation.
func TestCellCapCountsRepetitions(t *testing.T) {
	for reps, ok := range map[string]bool{"25000": true, "25001": false} {
		s, err := Parse("t.yaml", []byte(base+"repetitions: "+reps+"\n"))
		if (err == nil) != ok {
			t.Errorf("repetitions %s: %v, want allowed=%v", reps, err, ok)
		}
		if err == nil {
			if cells, err := s.Cells(); err != nil || len(cells) != MaxCells {
				t.Errorf("repetitions %s: %d cells, %v", reps, len(cells), err)
			}
			s.Repetitions++
			if cells, err := s.Cells(); err == nil {
				t.Errorf("Cells built %d cells after repetitions became %d", len(cells), s.Repetitions)
			}
		}
	}
}

// TestLoadRefusesWhatIsNotAFile: a scenario that is a FIFO or a device is
// refused at once.
func TestLoadRefusesWhatIsNotAFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero"} {
		done := make(chan error, 1)
		go func() { _, err := Load(path); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, untrusted.ErrNotRegular) {
				t.Errorf("Load(%s): %v", path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Load(%s) still running after 5 s", path)
		}
	}
}
