package ctlpeer

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/internal/daemontest"
)

func TestStoppedDaemonHelper(t *testing.T) { daemontest.StoppedDaemonMain() }

func TestParse(t *testing.T) {
	for _, c := range []struct {
		stat  string
		comm  string
		state byte
	}{
		{"4242 (emunic) T 1 4242 4242 0 -1", "emunic", 'T'},
		{"7 (a (b) c) S 1 7", "a (b) c", 'S'},
		{"8 () R 1", "", 'R'},
	} {
		p, err := Parse([]byte(c.stat))
		if err != nil || p.Comm != c.comm || p.State != c.state {
			t.Errorf("Parse(%q) = %+v, %v; want comm %q state %c", c.stat, p, err, c.comm, c.state)
		}
	}
	for _, bad := range []string{"", "4242 emunic T", "4242 (emunic)", "4242 (emunic) TT 1"} {
		if p, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", bad, p)
		}
	}
}

func TestStateWord(t *testing.T) {
	stopped := Proc{Pid: 42, Comm: "emunic", State: 'T'}
	if !stopped.Stopped() || stopped.StateWord() != "stopped (SIGSTOP)" || stopped.Hint() != "`kill -CONT 42` resumes it" {
		t.Errorf("T: stopped %v, %q, %q", stopped.Stopped(), stopped.StateWord(), stopped.Hint())
	}
	for _, st := range []byte{'R', 'S', 'D', 'I'} {
		if p := (Proc{Pid: 1, State: st}); p.Stopped() || p.Gone() || p.Hint() != "" {
			t.Errorf("%c: stopped %v, gone %v, hint %q", st, p.Stopped(), p.Gone(), p.Hint())
		}
	}
	for _, st := range []byte{0, 'Z', 'X'} {
		if p := (Proc{Pid: 1, State: st}); !p.Gone() {
			t.Errorf("%c: not gone", st)
		}
	}
	if got := Read(os.Getpid()); got.Stopped() || got.Gone() || got.Comm == "" {
		t.Errorf("Read(self) = %+v", got)
	}
}

// A client of a stopped daemon's socket connects, writes its request and
// then waits: the deadline's error names the listener and its state.
func TestNoAnswerNamesAStoppedDaemon(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl.sock")
	pid := daemontest.StoppedDaemon(t, "TestStoppedDaemonHelper", path)
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := Pid(c); got != pid {
		t.Fatalf("Pid = %d, want the listener's %d", got, pid)
	}
	if _, err := c.Write([]byte("{\"op\":\"status\"}\n")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	_, err = c.Read(make([]byte, 1))
	err = NoAnswer(c, path, 100*time.Millisecond, err)
	var na *NoAnswerError
	if !errors.As(err, &na) || !na.Proc.Stopped() || !Timeout(err) {
		t.Fatalf("NoAnswer = %#v, want a NoAnswerError of a stopped process that is a timeout", err)
	}
	for _, want := range []string{path, "(pid " + strconv.Itoa(pid) + ") did not answer in 100ms", "it is stopped (SIGSTOP)", "`kill -CONT " + strconv.Itoa(pid) + "`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	// Any other error is not a missing answer.
	other := errors.New("broken pipe")
	if got := NoAnswer(c, path, time.Second, other); got != other {
		t.Errorf("NoAnswer(other) = %v", got)
	}
}
