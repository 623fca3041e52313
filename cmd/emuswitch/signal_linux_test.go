package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalWhileDialling: SIGTERM while a seqpacket-dial port waits for a
// peer that never listens stops the daemon at once (not after the dial
// retries give up) with exit status 0, and the socket files it had created
// (a listening port's, here) are gone. No root needed.
func TestSignalWhileDialling(t *testing.T) {
	bin := buildDaemon(t)
	dir := t.TempDir()
	labFile := filepath.Join(dir, "lab.yaml")
	if err := os.WriteFile(labFile, []byte(`name: sigdial
topology:
  nodes:
    sw1: {kind: switch}
    sw2: {kind: switch}
    h1: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
    - endpoints: ["sw1:p2", "sw2:p1"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	sockDir := filepath.Join(dir, "sock")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	listen, nobody, ctl := filepath.Join(sockDir, "p1.sock"), filepath.Join(sockDir, "nobody.sock"), filepath.Join(sockDir, "ctl.sock")
	logPath := filepath.Join(dir, "log")
	cmd := exec.Command(bin, "--lab", labFile, "--node", "sw1", "--control", ctl, "--log", logPath,
		"--port", "p1=seqpacket-listen:"+listen, "--port", "p2=seqpacket-dial:"+nobody)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// done is closed when the process has exited, with its status in
	// waitErr.
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
	})

	// The daemon logs before it starts dialling; by then the listening
	// port's socket exists and the signal handler is installed.
	giveUp := time.After(30 * time.Second)
	for {
		b, _ := os.ReadFile(logPath)
		if bytes.Contains(b, []byte("port p2: dialling")) {
			break
		}
		select {
		case <-done:
			t.Fatalf("emuswitch exited before dialling: %v\n%s", waitErr, b)
		case <-giveUp:
			t.Fatalf("emuswitch did not log that it dials within 30 s:\n%s", b)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := os.Stat(listen); err != nil {
		t.Fatalf("listening socket before the signal: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		if waitErr != nil {
			b, _ := os.ReadFile(logPath)
			t.Errorf("exit after SIGTERM: %v (want status 0)\n%s", waitErr, b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10 s after SIGTERM while dialling")
	}
	if stdout.Len() != 0 {
		t.Errorf("printed %q: it never was ready", stdout.String())
	}
	ents, err := os.ReadDir(sockDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind: %s", e.Name())
	}
}

// TestExitWithPid: with --exit-with-pid, the switch ends as on SIGTERM
// (status 0, its socket files removed, the reason in its log) when that
// process exits: lab.Start passes the test's pid, so a test binary that
// dies without its cleanups does not leave the lab's switches running.
func TestExitWithPid(t *testing.T) {
	bin := buildDaemon(t)
	dir := t.TempDir()
	labFile := filepath.Join(dir, "lab.yaml")
	if err := os.WriteFile(labFile, []byte(`name: exitwith
topology:
  nodes:
    sw1: {kind: switch}
    h1: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	owner := exec.Command("sleep", "60")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { owner.Process.Kill(); owner.Wait() }()

	sockDir := filepath.Join(dir, "sock")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "log")
	cmd := exec.Command(bin, "--lab", labFile, "--node", "sw1", "--control", filepath.Join(sockDir, "ctl.sock"), "--log", logPath,
		"--port", "p1=seqpacket-listen:"+filepath.Join(sockDir, "p1.sock"), "--exit-with-pid", strconv.Itoa(owner.Process.Pid))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	ready := make(chan bool, 1)
	go func() {
		b := make([]byte, 64)
		n, _ := io.ReadAtLeast(stdout, b, len("ready\n"))
		ready <- string(b[:n]) == "ready\n"
		io.Copy(io.Discard, stdout)
		waitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
	})
	if ok := <-ready; !ok {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("emuswitch did not print ready:\n%s", b)
	}

	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	owner.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10 s after the --exit-with-pid process exited")
	}
	b, _ := os.ReadFile(logPath)
	if waitErr != nil || !bytes.Contains(b, []byte(fmt.Sprintf("pid %d: the process of --exit-with-pid exited: shutting down", owner.Process.Pid))) {
		t.Errorf("exit %v, want status 0 and the reason in the log:\n%s", waitErr, b)
	}
	ents, err := os.ReadDir(sockDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind: %s", e.Name())
	}

	// A process that is already gone is refused at once.
	out, err := exec.Command(bin, "--lab", labFile, "--node", "sw1", "--control", filepath.Join(sockDir, "ctl.sock"),
		"--port", "p1=seqpacket-listen:"+filepath.Join(sockDir, "p1.sock"), "--exit-with-pid", strconv.Itoa(owner.Process.Pid)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--exit-with-pid") {
		t.Errorf("--exit-with-pid of a process that exited: %v\n%s", err, out)
	}
}
