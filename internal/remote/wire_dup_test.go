package remote

import (
	"strings"
	"testing"
)

// TestDuplicateKeysAreRefused: a message that names a key twice, at any
// depth, in any case (encoding/json matches fields without regard to
// case and keeps the last), is refused; the same keys in sibling objects
// and in arrays of objects are not duplicates.
func TestDuplicateKeysAreRefused(t *testing.T) {
	for _, bad := range []string{
		`{"seq":2,"op":"ping","op":"bye"}`,
		`{"seq":2,"op":"ping","Op":"bye"}`,
		`{"seq":2,"SEQ":9,"op":"ping"}`,
		`{"seq":4,"op":"serve","args":{"kind":"request-response","port":4433,"port":22}}`,
		`{"seq":4,"op":"serve","args":{"settings":{"tls_version":"1.3","tls_version":"1.2"}}}`,
	} {
		if _, err := DecodeRequest([]byte(bad)); err == nil || !strings.Contains(err.Error(), "duplicate key") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	for _, good := range []string{
		`{"seq":1,"op":"ping"}`,
		`{"seq":4,"op":"serve","args":{"kind":"request-response","protocol":"tls","port":4433,"settings":{"tls_version":"1.3"}}}`,
		`{"seq":5,"op":"ping","args":[{"id":1},{"id":2}]}`,
		`{"seq":6,"op":"ping","args":{"a":{"id":1},"b":{"id":2}}}`,
		`{"seq":7,"op":"ping","args":{"a":["op","op"],"op":1}}`,
	} {
		if err := noDuplicateKeys([]byte(good)); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
}
