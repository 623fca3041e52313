package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCaptureFileDiscard: a capture that never started removes the file
// it made, and nothing that was there before: `emulab capture -w
// /dev/null` against a stopped switch removed /dev/null.
func TestCaptureFileDiscard(t *testing.T) {
	dir := t.TempDir()

	made := filepath.Join(dir, "new.pcapng")
	f, err := createCaptureFile(made)
	if err != nil {
		t.Fatal(err)
	}
	f.discard()
	if _, err := os.Lstat(made); !os.IsNotExist(err) {
		t.Errorf("the file capture made is still there (%v)", err)
	}

	old := filepath.Join(dir, "old.pcapng")
	if err := os.WriteFile(old, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err = createCaptureFile(old); err != nil {
		t.Fatal(err)
	}
	f.discard()
	if b, err := os.ReadFile(old); err != nil || string(b) != "x" {
		t.Errorf("a file that was there before was removed or emptied: %q, %v", b, err)
	}

	// A capture that begins writing replaces what the file held, a longer
	// capture's bytes too, as tcpdump -w does.
	if err := os.WriteFile(old, []byte("an earlier, longer capture"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err = createCaptureFile(old); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, err := os.ReadFile(old); err != nil || string(b) != "new" {
		t.Errorf("after a capture wrote %q the file holds %q (%v)", "new", b, err)
	}

	// A node that is not a regular file (here a FIFO, which needs no
	// root; /dev/null is a character device) stays what it is.
	node := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(node, 0o666); err != nil {
		t.Fatal(err)
	}
	if f, err = createCaptureFile(node); err != nil { // O_RDWR: a FIFO opens without a reader
		t.Fatal(err)
	}
	f.discard()
	if st, err := os.Lstat(node); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was removed or replaced: %v", err)
	}
}
