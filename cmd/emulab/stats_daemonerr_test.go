package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/emufabric/emufabric/lab"
)

// TestDaemonErrorReset: a daemon killed a moment before stats asks it can
// still accept the connection and then reset it unanswered; stats must say
// the daemon does not answer, as for a refused socket, not quote a bare
// "connection reset by peer".
func TestDaemonErrorReset(t *testing.T) {
	n := &lab.NodeInfo{Name: "sw1"}
	reset := fmt.Errorf("control ctl-sw1.sock: %w", &net.OpError{Op: "read", Net: "unix", Err: os.NewSyscallError("read", syscall.ECONNRESET)})
	for _, err := range []error{reset, fmt.Errorf("control ctl-sw1.sock: %w", io.EOF)} {
		got := daemonError("stats l1/sw1", n, "/s", "l1", err)
		for _, want := range []string{"sw1's daemon does not answer on its control socket", "emulab status --state-dir /s l1"} {
			if !strings.Contains(got.Error(), want) {
				t.Errorf("%v: %q does not say %q", err, got, want)
			}
		}
		if !errors.Is(got, err) {
			t.Errorf("the error must wrap the cause: %v", got)
		}
	}
	other := errors.New("counters: unknown port")
	if got := daemonError("stats l1/sw1", n, "/s", "l1", other); strings.Contains(got.Error(), "does not answer") {
		t.Errorf("an answer taken for silence: %q", got)
	}
}
