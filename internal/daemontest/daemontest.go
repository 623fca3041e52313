// Package daemontest runs a daemon binary (emuswitch, emunic) for a test:
// build it from the package under test, start it, wait for a line in its
// log or for its exit, and kill it at the test's end whatever happened;
// and talk to its control socket (Converse).
package daemontest

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Build builds the main package in the current directory (the package
// under test) into a temporary directory and returns the binary's path.
func Build(t testing.TB, name string) string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go toolchain to build %s: %v", name, err)
		}
	}
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	return bin
}

// Proc is a started daemon.
type Proc struct {
	Cmd    *exec.Cmd
	Stdout bytes.Buffer
	name   string
	log    string
	done   chan struct{}
	err    error
}

// Start starts cmd (its standard output collected in Stdout) and kills it
// at the test's end if it still runs. log is the file its --log writes.
func Start(t testing.TB, name string, cmd *exec.Cmd, log string) *Proc {
	t.Helper()
	p := &Proc{Cmd: cmd, name: name, log: log, done: make(chan struct{})}
	cmd.Stdout = &p.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// Log is the daemon's log so far.
func (p *Proc) Log() []byte {
	b, _ := os.ReadFile(p.log)
	return b
}

// WaitLog waits up to 30 s for s in the daemon's log; the test fails if
// the daemon exits first or the time runs out.
func (p *Proc) WaitLog(t testing.TB, s string) {
	t.Helper()
	giveUp := time.After(30 * time.Second)
	for !bytes.Contains(p.Log(), []byte(s)) {
		select {
		case <-p.done:
			t.Fatalf("%s exited before logging %q: %v\n%s", p.name, s, p.err, p.Log())
		case <-giveUp:
			t.Fatalf("%s did not log %q within 30 s:\n%s", p.name, s, p.Log())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// WaitExit waits up to d for the daemon to exit and returns its status;
// the test fails, naming why, if it still runs.
func (p *Proc) WaitExit(t testing.TB, d time.Duration, why string) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		t.Fatalf("%s still running %v after %s", p.name, d, why)
		return nil
	}
}

// Converse sends data down a daemon's control socket, half-closes it and
// returns everything the daemon answered until it closed. The answer is
// read while data is written, so neither side waits on a full buffer.
func Converse(t testing.TB, socket string, data []byte) *bufio.Reader {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(c)
		out <- b
	}()
	c.Write(data)
	c.(*net.UnixConn).CloseWrite()
	return bufio.NewReader(bytes.NewReader(<-out))
}
