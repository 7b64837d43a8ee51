// Package all registers every protocol family: a program imports it for
// its side effects, as a database/sql program imports its drivers.
//
//	import _ "tlab/internal/proto/all"
package all

import (
	// Each family registers its protocols in proto.Default from init.
	_ "tlab/internal/proto/frames"
	_ "tlab/internal/proto/mqtt"
	_ "tlab/internal/proto/reqresp"
)
