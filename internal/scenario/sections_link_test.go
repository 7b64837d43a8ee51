package scenario_test

// The sections other packages own register themselves from their init
// (scenario.RegisterSection); this package's tests read scenarios with
// them, so its test binary links them, as tlab does.
import (
	_ "tlab/internal/advise"
	_ "tlab/internal/beside"
	_ "tlab/internal/cross"
	_ "tlab/internal/explore"
	_ "tlab/internal/qoo"
	_ "tlab/internal/stacks"
)
