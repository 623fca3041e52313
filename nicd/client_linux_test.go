package nicd

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/internal/ctlpeer"
	"github.com/emufabric/emufabric/internal/daemontest"
)

func TestStoppedDaemonHelper(t *testing.T) { daemontest.StoppedDaemonMain() }

// `emulab perf` against an emunic stopped with SIGSTOP: the requests go
// into its socket and nothing answers. Every request, the perf loops that
// wait as long as a test runs included, ends once the daemon was seen
// stopped for StoppedWait, with an error that names it.
func TestClientStoppedDaemon(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl-h1.sock")
	pid := daemontest.StoppedDaemon(t, "TestStoppedDaemonHelper", path)
	for _, req := range []*Request{{Op: "status"}, {Op: "perf_bw", BW: &BWParams{}}, {Op: "poll_cq", TimeoutMs: 60_000}} {
		c, err := Dial(path)
		if err != nil {
			t.Fatal(err)
		}
		c.StoppedWait = 100 * time.Millisecond
		_, err = c.Call(req, -1)
		var na *ctlpeer.NoAnswerError
		if !errors.As(err, &na) || na.Proc.Pid != pid || !na.Proc.Stopped() {
			t.Fatalf("%s: %v, want a NoAnswerError of the stopped pid %d", req.Op, err, pid)
		}
		if !strings.Contains(err.Error(), "stopped (SIGSTOP)") {
			t.Errorf("%s: %q does not say the daemon is stopped", req.Op, err)
		}
		// The answer may still come: the connection is out of step.
		if _, err := c.Call(&Request{Op: "status"}, -1); err == nil || !strings.Contains(err.Error(), "an earlier request") {
			t.Errorf("%s: the next request on the connection: %v", req.Op, err)
		}
		c.Close()
	}
}

// A daemon that runs and does not answer a request it answers at once
// (wedged) is given up on after Timeout; the error names it as running.
func TestClientTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held, never answered
		}
	}()
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Timeout = 100 * time.Millisecond
	_, err = c.Status()
	var na *ctlpeer.NoAnswerError
	if !errors.As(err, &na) || na.Proc.Pid != os.Getpid() || na.Proc.Stopped() {
		t.Fatalf("Status: %v, want a NoAnswerError naming this process", err)
	}
}

// An answer cut by a deadline between its bytes is put back together.
func TestClientAnswerAcrossChecks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		c.Read(buf)
		c.Write([]byte(`{"ok":true,"status":{"link":`))
		time.Sleep(2 * peerCheck)
		c.Write([]byte(`"up"}}` + "\n"))
	}()
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Status()
	if err != nil || st == nil || st.Link != "up" {
		t.Fatalf("Status = %+v, %v", st, err)
	}
}

func TestAnswerBound(t *testing.T) {
	const d = time.Second
	for _, c := range []struct {
		req  Request
		want time.Duration
	}{
		{Request{Op: "status"}, d},
		{Request{Op: "reg_mr"}, d},
		{Request{Op: "poll_cq", TimeoutMs: 1500}, 1500*time.Millisecond + d},
		{Request{Op: "perf_bw"}, 0},
		{Request{Op: "perf_lat"}, 0},
		{Request{Op: "perf_recv"}, 0},
		{Request{Op: "perf_pong"}, 0},
	} {
		if got := answerBound(&c.req, d); got != c.want {
			t.Errorf("answerBound(%s) = %v, want %v", c.req.Op, got, c.want)
		}
	}
}
