package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/emufabric/emufabric/internal/daemontest"
)

// TestSignalWhileDialling: SIGTERM while the seqpacket-dial port waits for
// a peer that never listens stops the daemon at once (not after the dial
// retries give up) with exit status 0, leaving no socket file behind (its
// control socket is created only after the link is bound). No root needed
// (no TAP).
func TestSignalWhileDialling(t *testing.T) {
	bin := daemontest.Build(t, "emunic")
	dir := t.TempDir()
	sockDir := filepath.Join(dir, "sock")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "log")
	p := daemontest.Start(t, "emunic", exec.Command(bin, "--lab", writeLab(t), "--node", "h1",
		"--port", "seqpacket-dial:"+filepath.Join(sockDir, "nobody.sock"),
		"--control", filepath.Join(sockDir, "ctl.sock"), "--log", logPath), logPath)
	// The daemon logs before it starts dialling; the signal handler is
	// installed by then.
	p.WaitLog(t, ": dialling")
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitExit(t, 10*time.Second, "SIGTERM while dialling"); err != nil {
		t.Errorf("exit after SIGTERM: %v (want status 0)\n%s", err, p.Log())
	}
	if p.Stdout.Len() != 0 {
		t.Errorf("printed %q: it never was ready", p.Stdout.String())
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
	bin := daemontest.Build(t, "emunic")
	dir := t.TempDir()
	owner := exec.Command("sleep", "60")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { owner.Process.Kill(); owner.Wait() }()
	logPath := filepath.Join(dir, "log")
	p := daemontest.Start(t, "emunic", exec.Command(bin, "--lab", writeLab(t), "--node", "h1",
		"--port", "seqpacket-dial:"+filepath.Join(dir, "nobody.sock"),
		"--control", filepath.Join(dir, "ctl.sock"), "--log", logPath,
		"--exit-with-pid", strconv.Itoa(owner.Process.Pid)), logPath)
	p.WaitLog(t, ": dialling")
	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	owner.Wait()
	err := p.WaitExit(t, 10*time.Second, "the --exit-with-pid process exited")
	if b := p.Log(); err != nil || !bytes.Contains(b, []byte(fmt.Sprintf("pid %d: the process of --exit-with-pid exited while starting", owner.Process.Pid))) {
		t.Errorf("exit %v, want status 0 and the reason in the log:\n%s", err, b)
	}
}
