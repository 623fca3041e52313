package lab

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/internal/ctlpeer"
	"github.com/emufabric/emufabric/internal/daemontest"
)

func TestStoppedDaemonHelper(t *testing.T) { daemontest.StoppedDaemonMain() }

// A daemon stopped with SIGSTOP keeps its control socket: the client's
// request goes in and only the deadline ends the wait. Every client of
// the package says which daemon did not answer and that it is stopped.
func TestControlRequestNamesAStoppedDaemon(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl-h1.sock")
	pid := daemontest.StoppedDaemon(t, "TestStoppedDaemonHelper", path)
	const timeout = 200 * time.Millisecond
	check := func(what string, err error) {
		t.Helper()
		var na *ctlpeer.NoAnswerError
		if !errors.As(err, &na) || na.Proc.Pid != pid {
			t.Fatalf("%s: %v, want a NoAnswerError naming pid %d", what, err, pid)
		}
		for _, want := range []string{path, "(pid " + strconv.Itoa(pid) + ")", "stopped (SIGSTOP)", "kill -CONT"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", what, err, want)
			}
		}
	}
	_, err := QueryDaemonView(path, timeout)
	check("status", err)
	_, err = QueryCounters(path, "", timeout)
	check("counters", err)
	_, err = OpenCapture(path, nil, false, timeout)
	check("capture", err)
	_, err = SetLink(path, LinkChange{State: "down"}, timeout)
	check("link", err)
	if err == nil || !strings.Contains(err.Error(), "may still apply it") {
		t.Errorf("link: %v does not say the request may still be applied", err)
	}
}
