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
}

// createCaptureFile opens -w FILE for writing, truncated as tcpdump -w
// does, noting whether it was there before.
func createCaptureFile(path string) (*captureFile, error) {
	_, err := os.Lstat(path)
	created := errors.Is(err, os.ErrNotExist)
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &captureFile{File: f, path: path, created: created}, nil
}

// discard closes a file no daemon captured into and removes it if capture
// made it and it is a regular file: an empty file is left behind for
// nothing. Anything that was there before stays: capture runs as root,
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
