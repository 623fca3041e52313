package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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
	// A FIFO opens for writing once it has a reader (a non-blocking
	// open for reading needs no writer).
	rd, err := os.OpenFile(node, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if f, err = createCaptureFile(node); err != nil {
		t.Fatal(err)
	}
	f.discard()
	if st, err := os.Lstat(node); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was removed or replaced: %v", err)
	}
}

// TestCaptureFileFIFOReaderGone: -w FIFO (wireshark -k -i FIFO) ends when
// its reader goes away, as -w - does. Opened O_RDWR, capture was itself a
// reader of the FIFO: writes went on after Wireshark closed it, then
// blocked for good once the FIFO was full, and SIGINT could not end the
// capture stuck in its write.
func TestCaptureFileFIFOReaderGone(t *testing.T) {
	node, rd := fifoWithReader(t)
	f, err := createCaptureFile(node)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone, stopWatch := context.WithCancel(ctx)
	watchReader(gone, f.File, stopWatch)
	if _, err := f.Write([]byte("block")); err != nil {
		t.Fatalf("write with a reader: %v", err)
	}
	rd.Close()
	// The watch sees the reader go (poll's POLLERR on the writer's end)...
	select {
	case <-gone.Done():
	case <-time.After(30 * time.Second):
		t.Error("the FIFO's reader closed it; watchReader did not notice")
	}
	// ...and the next write fails rather than filling the FIFO.
	if _, err := f.Write([]byte("block")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("write after the reader closed the FIFO: %v, want EPIPE", err)
	}
}

// TestCaptureFileFinishNotStarted: a -w FIFO whose reader went before the
// capture's header got out ends the capture with nothing started (the
// EPIPE is the reader going, not an error); finishing it closes the file
// once and reports no error. It closed it twice, and the second Close's
// "file already closed" made the capture exit with status 1.
func TestCaptureFileFinishNotStarted(t *testing.T) {
	node, rd := fifoWithReader(t)
	f, err := createCaptureFile(node)
	if err != nil {
		t.Fatal(err)
	}
	rd.Close()
	if _, err := f.Write([]byte("header")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write after the reader went: %v, want EPIPE", err)
	}
	if err := f.finish(false); err != nil {
		t.Errorf("finish of a capture that never started: %v", err)
	}
	if _, err := os.Lstat(node); err != nil {
		t.Errorf("the FIFO was removed: %v", err)
	}

	// Started: closed, kept.
	path := filepath.Join(t.TempDir(), "c.pcapng")
	if f, err = createCaptureFile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := f.finish(true); err != nil {
		t.Errorf("finish of a started capture: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "x" {
		t.Errorf("the started capture's file: %q, %v", b, err)
	}
}

// fifoWithReader makes a FIFO and opens its reading end, without blocking,
// so that an open for writing (createCaptureFile) does not wait. The
// reader is closed at the test's end if the test has not closed it.
func fifoWithReader(t *testing.T) (node string, rd *os.File) {
	t.Helper()
	node = filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(node, 0o600); err != nil {
		t.Fatal(err)
	}
	rd, err := os.OpenFile(node, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return node, rd
}
