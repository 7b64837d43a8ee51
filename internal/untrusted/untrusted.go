// Package untrusted is the one way tlab opens and reads a file that comes
// from elsewhere: a profile, a scenario, a results directory someone sent,
// a tool's output. tlab reads them as root. Whatever its name says, such a
// file may be a FIFO (an open or a read that never returns), a device
// (/dev/zero never ends) or far larger than it should be: only regular
// files are read, and never more than a cap the caller names. It imports
// nothing of tlab's.
package untrusted

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is returned for a file that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError says a file holds more than the cap of what is read of it.
type TooLargeError struct {
	Name  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %d bytes, the most tlab reads of such a file", e.Name, e.Limit)
}

// Open opens path for reading if it is a regular file. The open
// does not block (O_NONBLOCK: a FIFO without a writer would hold it
// forever) and the check is made on the open descriptor (fstat), so the
// name cannot be swapped between the check and the read. Links are
// followed: a profile may well be one.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return checkRegular(f, path)
}

// OpenNoFollow is Open for a file in a directory someone else can write
// to (a command's own directory, the user's): a link there is refused,
// never followed, for it could name any file root can read.
func OpenNoFollow(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a link: only a regular file is read", path)
		}
		return nil, err
	}
	return checkRegular(f, path)
}

// OpenIn is Open for name inside root: it also refuses a
// name or a link that leads out of root (a received results directory
// whose manifest.json links to a file of this machine's).
func OpenIn(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return checkRegular(f, f.Name())
}

func checkRegular(f *os.File, name string) (*os.File, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w (%s)", name, ErrNotRegular, kindOf(st.Mode()))
	}
	return f, nil
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// ReadFile reads all of the regular file at path, refusing one larger
// than limit bytes with a *TooLargeError naming the file and the cap.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// ReadFileIn is ReadFile for name inside root.
func ReadFileIn(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := OpenIn(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, f.Name(), limit)
}

// ReadAll reads r to its end, refusing more than limit bytes (named
// name in the error) without reading more than one byte past the cap.
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	return io.ReadAll(Reader(r, name, limit))
}

// Reader reads r until limit bytes; a byte beyond them is an error
// (*TooLargeError), not a silent end as io.LimitReader's: a file cut at
// the cap would otherwise read as a shorter, valid one.
func Reader(r io.Reader, name string, limit int64) io.Reader {
	return &boundedReader{r: r, name: name, limit: limit, left: limit}
}

type boundedReader struct {
	r     io.Reader
	name  string
	limit int64
	left  int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &TooLargeError{Name: b.name, Limit: b.limit}
	}
	// Ask for one byte more than is left, to tell "exactly at the cap"
	// from "beyond it".
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n + int(b.left), &TooLargeError{Name: b.name, Limit: b.limit}
	}
	return n, err
}
