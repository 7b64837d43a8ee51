package untrusted

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenRefusesWhatIsNotAFile: a FIFO (whose open and read would
// block for ever), /dev/zero (which never ends), a link to it and a
// directory are refused at once, each named.
func TestOpenRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "manifest.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zeroLink := filepath.Join(dir, "profile.yaml")
	if err := os.Symlink("/dev/zero", zeroLink); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero", zeroLink, dir} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(path, 1<<20); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), path) {
				t.Errorf("ReadFile(%s) = %v, want %v naming the file", path, err, ErrNotRegular)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFile(%s) still blocked after 5 s", path)
		}
	}
}

// TestReadFileCapsTheSize: a file of exactly the cap is read whole; one
// byte more is an error that names the file and the cap.
func TestReadFileCapsTheSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.json")
	const limit = 1000
	data := bytes.Repeat([]byte("x"), limit)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path, limit)
	if err != nil || len(got) != limit {
		t.Fatalf("a file of exactly the cap: %d bytes, %v", len(got), err)
	}
	if err := os.WriteFile(path, append(data, 'y'), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile(path, limit)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "1000 bytes") {
		t.Fatalf("a file one byte over the cap: %v, want a TooLargeError naming %s and 1000 bytes", err, path)
	}
}

// TestReaderStopsAtTheCap: reading an endless stream through it
// ends with the error after at most the cap and one byte.
func TestReaderStopsAtTheCap(t *testing.T) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadAll(f, "/dev/zero", 4096)
	var tl *TooLargeError
	if !errors.As(err, &tl) || len(got) > 4096 {
		t.Fatalf("%d bytes, %v; want at most 4096 and a TooLargeError", len(got), err)
	}
}

// TestOpenInStaysInTheDirectory: inside a received directory, a
// link out of it (to a file of this machine) is refused; one to a file
// within it is read.
func TestOpenInStaysInTheDirectory(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "real.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(secret, filepath.Join(dir, "out.json"))
	os.Symlink("real.json", filepath.Join(dir, "in.json"))
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if b, err := ReadFileIn(root, "out.json", 100); err == nil {
		t.Errorf("read %q through a link out of the directory", b)
	}
	if b, err := ReadFileIn(root, "in.json", 100); err != nil || string(b) != "{}" {
		t.Errorf("a link within the directory: %q, %v", b, err)
	}
}

// In a directory another user writes to, a link to root's file must not
// be read through, while Open (for profiles, which may be links) follows it.
func TestOpenNoFollowRefusesALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "secret")
	if err := os.WriteFile(target, []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "events.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenNoFollow(link); err == nil {
		f.Close()
		t.Fatal("OpenNoFollow read through a link")
	}
	f, err := OpenNoFollow(target)
	if err != nil {
		t.Fatalf("a regular file: %v", err)
	}
	f.Close()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenNoFollow(fifo); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a FIFO: %v, want ErrNotRegular", err)
	}
}
