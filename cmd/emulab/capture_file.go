package main

import (
	"errors"
	"os"
)

// captureFile is capture's -w FILE, and whether capture made it.
type captureFile struct {
	*os.File
	path    string
	created bool // FILE was not there: capture made it
	written bool // the capture began writing: FILE was truncated
}

// createCaptureFile opens -w FILE for writing, noting whether it was
// there before. It is truncated at the first write, once every daemon
// answered, as tcpdump -w opens its file only once the interface is open:
// opened truncated, a capture that never began (a port name mistyped, a
// daemon stopped) left the previous capture of that name empty.
//
// A FIFO (mkfifo, read by wireshark -k -i FIFO) is opened write-only,
// which waits for its reader, as tcpdump -w and dumpcap -w do. Opened
// O_RDWR, as os.Create opens, this process was a reader of its own FIFO:
// when Wireshark closed it, no write failed and poll reported no error
// (watchReader), so the capture went on, its writes blocked once the
// FIFO's 64 KiB filled, and it then ignored SIGINT and SIGTERM, stuck in
// a write. Write-only, the reader's going fails the next write with EPIPE
// and the capture ends, as with -w -.
func createCaptureFile(path string) (*captureFile, error) {
	_, err := os.Lstat(path)
	created := errors.Is(err, os.ErrNotExist)
	flag := os.O_RDWR | os.O_CREATE
	if isFIFO(path) {
		flag = os.O_WRONLY
	}
	f, err := os.OpenFile(path, flag, 0o666)
	if err != nil {
		return nil, err
	}
	return &captureFile{File: f, path: path, created: created}, nil
}

// isFIFO reports whether path names a FIFO (after symbolic links): -w
// FIFO waits for a reader to open it.
func isFIFO(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode()&os.ModeNamedPipe != 0
}

// Write truncates a regular file that was there before at the first
// write (a FIFO or a device has nothing to truncate), then writes.
func (c *captureFile) Write(b []byte) (int, error) {
	if !c.written {
		c.written = true
		if st, err := c.File.Stat(); err == nil && st.Mode().IsRegular() && !c.created {
			if err := c.File.Truncate(0); err != nil {
				return 0, err
			}
		}
	}
	return c.File.Write(b)
}

// finish closes -w FILE at the end of a capture, or discards it when no
// daemon captured (started is false). It closes the file once: a capture
// whose -w FIFO lost its reader before the header went out ends with
// streamLive's nil error (EPIPE is the reader going) and nothing started,
// and a second Close after discard's failed with "file already closed",
// an exit status of 1 for a capture that ended as -w - does.
func (c *captureFile) finish(started bool) error {
	if !started {
		c.discard()
		return nil
	}
	return c.Close()
}

// discard closes a file no daemon captured into and removes it if capture
// made it and it is a regular file: an empty file is left behind for
// nothing. Anything that was there before stays, with its bytes (nothing
// was written, so nothing truncated it): capture runs as root,
// and `-w /dev/null` against a lab that did not answer removed /dev/null
// (the next `> /dev/null` then made it a regular file, for every
// program on the machine).
func (c *captureFile) discard() {
	c.Close()
	if !c.created {
		return
	}
	if st, err := os.Lstat(c.path); err == nil && st.Mode().IsRegular() {
		os.Remove(c.path)
	}
}
