package lab

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStatusCommand: hints give back the user's --state-dir, and leave
// the default out.
func TestStatusCommand(t *testing.T) {
	for _, tc := range []struct{ root, name, want string }{
		{DefaultStateRoot, "l1", "emulab status l1"},
		{"", "l1", "emulab status l1"},
		{"/srv/labs", "l1", "emulab status --state-dir /srv/labs l1"},
		{"/srv/labs", "", "emulab status --state-dir /srv/labs"},
	} {
		if got := StatusCommand(tc.root, tc.name); got != tc.want {
			t.Errorf("StatusCommand(%q, %q) = %q, want %q", tc.root, tc.name, got, tc.want)
		}
	}
	if got := downCommand("/srv/labs", "l1"); got != "emulab down --state-dir /srv/labs l1" {
		t.Errorf("downCommand: %q", got)
	}
}

// TestDialControlHint: a daemon that is not running is said so once, with
// the status command of its lab under the socket's state root.
func TestDialControlHint(t *testing.T) {
	root := t.TempDir()
	_, err := dialControl(filepath.Join(root, "l1", "sock", "sw1.sock"), time.Second)
	if !errors.Is(err, ErrNoDaemon) || !strings.Contains(err.Error(), "`emulab status --state-dir "+root+" l1` shows which is dead") {
		t.Errorf("dial: %v", err)
	}
	if n := strings.Count(err.Error(), "not running"); n != 1 {
		t.Errorf("says not running %d times: %v", n, err)
	}
}

// A socket where up puts it names its lab and root; one elsewhere, plain
// status.
func TestSocketStatusCommand(t *testing.T) {
	for path, want := range map[string]string{
		"/tmp/labs/l1/sock/sw1.sock":     "emulab status --state-dir /tmp/labs l1",
		DefaultStateRoot + "/l1/sock/h1": "emulab status l1",
		"/var/tmp/ctl.sock":              "emulab status",
	} {
		if got := socketStatusCommand(path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}

// TestLinkSetCommand: a hint to set the far end of a link gives back the
// user's --state-dir, and the endpoint with its lab.
func TestLinkSetCommand(t *testing.T) {
	if got, want := LinkSetCommand(DefaultStateRoot, "l1/sw1:p3", "up"), "emulab link set l1/sw1:p3 up"; got != want {
		t.Errorf("default root: %q, want %q", got, want)
	}
	if got, want := LinkSetCommand("/tmp/x", "l1/sw1:p3", "delay 5ms"), "emulab link set --state-dir /tmp/x l1/sw1:p3 delay 5ms"; got != want {
		t.Errorf("other root: %q, want %q", got, want)
	}
}
