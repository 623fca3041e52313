package ctlsock

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBindErrors: each way a --control path cannot be bound is named.
func TestBindErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nodir", "ctl.sock")
	_, err := net.Listen("unix", missing)
	if got := BindError(missing, err); got == nil || !strings.Contains(got.Error(), "directory "+filepath.Join(dir, "nodir")+" does not exist") {
		t.Errorf("missing directory: %v", got)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = net.Listen("unix", file)
	if got := BindError(file, err); got == nil || !strings.Contains(got.Error(), "is not a socket") {
		t.Errorf("a file in the way: %v", got)
	}
	live := filepath.Join(dir, "live.sock")
	ln, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	if !Live(live) {
		t.Error("Live: false for a listening socket")
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // as after kill -9
	ln.Close()
	if Live(live) || Live(file) || Live(missing) {
		t.Error("Live: true for a stale socket, a file or nothing")
	}
}
