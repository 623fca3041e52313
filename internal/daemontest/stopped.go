package daemontest

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stoppedEnv names the socket a StoppedDaemon's process listens on.
const stoppedEnv = "EMU_DAEMONTEST_STOPPED_SOCKET"

// StoppedDaemon starts a process that listens on the unix socket path
// and then stops it with SIGSTOP, as `kill -STOP` stops an emunic: its
// socket takes connections and requests and nothing answers them. It
// returns the process's pid; the process is killed at the test's end.
//
// The process is the test binary itself, run for the test named helper,
// which must call StoppedDaemonMain first thing:
//
//	func TestStoppedDaemonHelper(t *testing.T) { daemontest.StoppedDaemonMain() }
func StoppedDaemon(t testing.TB, helper, path string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$")
	cmd.Env = append(os.Environ(), stoppedEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // SIGKILL ends a stopped process too
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "listening" {
		t.Fatalf("%s did not listen on %s: %q, %v", helper, path, line, err)
	}
	pid := cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The signal is delivered asynchronously: wait for the state.
	for i := 0; ; i++ {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if s := string(b); strings.Contains(s[strings.LastIndexByte(s, ')')+1:], " T ") {
			return pid
		}
		if i > 3000 {
			t.Fatalf("%s (pid %d) did not stop: %s", helper, pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// StoppedDaemonMain is the listening process of StoppedDaemon: run from
// its helper test, it listens, says so, and holds every connection
// without answering until it is killed. In any other run it returns at
// once.
func StoppedDaemonMain() {
	path := os.Getenv(stoppedEnv)
	if path == "" {
		return
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		os.Stdout.WriteString("listen: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("listening\n")
	var held []net.Conn
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		held = append(held, c)
	}
}
