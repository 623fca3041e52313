package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emufabric/emufabric/internal/daemontest"
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
	p := daemontest.Start(t, "emuswitch", exec.Command(bin, "--lab", labFile, "--node", "sw1", "--control", ctl, "--log", logPath,
		"--port", "p1=seqpacket-listen:"+listen, "--port", "p2=seqpacket-dial:"+nobody), logPath)
	// The daemon logs before it starts dialling; by then the listening
	// port's socket exists and the signal handler is installed.
	p.WaitLog(t, "port p2: dialling")
	if _, err := os.Stat(listen); err != nil {
		t.Fatalf("listening socket before the signal: %v", err)
	}
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
	p := daemontest.Start(t, "emuswitch", exec.Command(bin, "--lab", labFile, "--node", "sw1", "--control", filepath.Join(sockDir, "ctl.sock"), "--log", logPath,
		"--port", "p1=seqpacket-listen:"+filepath.Join(sockDir, "p1.sock"), "--exit-with-pid", strconv.Itoa(owner.Process.Pid)), logPath)
	p.WaitLog(t, "ready")

	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	owner.Wait()
	err := p.WaitExit(t, 10*time.Second, "the --exit-with-pid process exited")
	if b := p.Log(); err != nil || !bytes.Contains(b, []byte(fmt.Sprintf("pid %d: the process of --exit-with-pid exited: shutting down", owner.Process.Pid))) {
		t.Errorf("exit %v, want status 0 and the reason in the log:\n%s", err, b)
	}
	if !strings.HasPrefix(p.Stdout.String(), "ready") {
		t.Errorf("printed %q, want ready first", p.Stdout.String())
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
