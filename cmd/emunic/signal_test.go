package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestSignalWhileDialling: SIGTERM while the seqpacket-dial port waits for
// a peer that never listens stops the daemon at once (not after the dial
// retries give up) with exit status 0, leaving no socket file behind (its
// control socket is created only after the link is bound). No root needed
// (no TAP).
func TestSignalWhileDialling(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "emunic")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	sockDir := filepath.Join(dir, "sock")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "log")
	cmd := exec.Command(bin, "--lab", writeLab(t), "--node", "h1",
		"--port", "seqpacket-dial:"+filepath.Join(sockDir, "nobody.sock"),
		"--control", filepath.Join(sockDir, "ctl.sock"), "--log", logPath)
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

	// The daemon logs before it starts dialling; the signal handler is
	// installed by then.
	giveUp := time.After(30 * time.Second)
	for {
		b, _ := os.ReadFile(logPath)
		if bytes.Contains(b, []byte(": dialling")) {
			break
		}
		select {
		case <-done:
			t.Fatalf("emunic exited before dialling: %v\n%s", waitErr, b)
		case <-giveUp:
			t.Fatalf("emunic did not log that it dials within 30 s:\n%s", b)
		case <-time.After(10 * time.Millisecond):
		}
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

// TestExitWithPidWhileDialling: with --exit-with-pid, the NIC ends as on
// SIGTERM (status 0, the reason in its log) when that process exits, also
// while its port still waits for a peer: lab.Start passes the test's pid,
// so a test binary that dies without its cleanups does not leave the
// lab's NICs running.
func TestExitWithPidWhileDialling(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "emunic")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	owner := exec.Command("sleep", "60")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { owner.Process.Kill(); owner.Wait() }()
	logPath := filepath.Join(dir, "log")
	cmd := exec.Command(bin, "--lab", writeLab(t), "--node", "h1",
		"--port", "seqpacket-dial:"+filepath.Join(dir, "nobody.sock"),
		"--control", filepath.Join(dir, "ctl.sock"), "--log", logPath,
		"--exit-with-pid", strconv.Itoa(owner.Process.Pid))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
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
	giveUp := time.After(30 * time.Second)
	for {
		b, _ := os.ReadFile(logPath)
		if bytes.Contains(b, []byte(": dialling")) {
			break
		}
		select {
		case <-done:
			t.Fatalf("emunic exited before dialling: %v\n%s", waitErr, b)
		case <-giveUp:
			t.Fatalf("emunic did not log that it dials within 30 s:\n%s", b)
		case <-time.After(10 * time.Millisecond):
		}
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
	if waitErr != nil || !bytes.Contains(b, []byte(fmt.Sprintf("pid %d: the process of --exit-with-pid exited while starting", owner.Process.Pid))) {
		t.Errorf("exit %v, want status 0 and the reason in the log:\n%s", waitErr, b)
	}
}
