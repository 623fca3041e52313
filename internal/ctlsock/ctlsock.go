// Package ctlsock words the failures of binding a daemon's --control
// socket the same way for emuswitch and emunic: a user who runs them by
// hand meets a path that another daemon serves, or a directory not made
// yet, and "bind: address already in use" or "bind: no such file or
// directory" says neither.
package ctlsock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Live reports whether a process accepts connections on the unix stream
// socket at path: then the path is in use, not a leftover of a killed
// daemon to remove.
func Live(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return false
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// LiveError is the error for a path Live found served.
func LiveError(path string) error {
	return fmt.Errorf("a live daemon listens on %s (stop it, or give this one another path)", path)
}

// BindError explains err, from binding the socket at path: a missing
// directory is named (the daemon does not create it), and a path that is
// taken by a file that is not a socket says so.
func BindError(path string, err error) error {
	dir := filepath.Dir(path)
	switch {
	case errors.Is(err, syscall.ENOENT):
		if _, serr := os.Stat(dir); serr != nil {
			return fmt.Errorf("directory %s does not exist (create it first): %w", dir, err)
		}
	case errors.Is(err, syscall.EADDRINUSE):
		if fi, serr := os.Lstat(path); serr == nil && fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("%s exists and is not a socket (a file of that name is in the way): %w", path, err)
		}
	}
	return err
}
