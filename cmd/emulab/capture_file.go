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
// O_RDWR, as os.Create: a FIFO opens without waiting for a reader.
func createCaptureFile(path string) (*captureFile, error) {
	_, err := os.Lstat(path)
	created := errors.Is(err, os.ErrNotExist)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	return &captureFile{File: f, path: path, created: created}, nil
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
