package scenario

import (
	"strings"
	"testing"
)

// TestAnOverrideErrorNamesTheOverrideOnce: a bad value given with --set
// is reported as the override's, once; it was also placed at the line of
// the profiles it met ("t.yaml:2: t.yaml, in a --set override: ..."),
// a line the user never wrote the value on.
func TestAnOverrideErrorNamesTheOverrideOnce(t *testing.T) {
	src := "name: t\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic}\n"
	for _, set := range []string{"link.rate=abc", "protocols=[tcp, h9]"} {
		_, err := Parse("t.yaml", []byte(src), set)
		if err == nil {
			t.Fatalf("--set %s accepted", set)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "t.yaml, in a --set override: ") || strings.Contains(msg, "t.yaml:") {
			t.Errorf("--set %s: %q, want it named once as the override's", set, msg)
		}
	}
	// An error at a line of the file still names its line.
	_, err := Parse("t.yaml", []byte(src+"duration: soon\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "t.yaml:5: ") {
		t.Errorf("a bad duration on line 5: %v", err)
	}
}
