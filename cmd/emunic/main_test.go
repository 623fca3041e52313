package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emufabric/emufabric/nicd"
)

const testLab = `name: b2b
topology:
  nodes:
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "h2:eth0"]
`

func writeLab(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lab.yaml")
	if err := os.WriteFile(p, []byte(testLab), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFlagErrors: every refusal names the flag and the value at fault.
func TestFlagErrors(t *testing.T) {
	labFile := writeLab(t)
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--node", "h1", "--port", "seqpacket-listen:/x"}, "--lab is required"},
		{[]string{"--lab", labFile, "--port", "seqpacket-listen:/x"}, "--node is required"},
		{[]string{"--lab", labFile, "--node", "h1"}, "--port is required"},
		{[]string{"--lab", labFile, "--node", "h1", "--port", "x", "--time-dilation", "-2"}, "--time-dilation -2"},
		{[]string{"--lab", labFile, "--node", "h1", "--port", "tcp:1.2.3.4:5"}, `--port "tcp:1.2.3.4:5"`},
		{[]string{"--lab", labFile, "--node", "h7", "--port", "seqpacket-listen:" + dir + "/a.sock"}, `--node "h7"`},
		{[]string{"--lab", labFile, "--node", "h1", "--tap", "eth0@../x", "--port", "seqpacket-listen:" + dir + "/b.sock"}, "--tap"},
		{[]string{"--lab", filepath.Join(dir, "missing.yaml"), "--node", "h1", "--port", "seqpacket-listen:/x"}, "missing.yaml"},
		{[]string{"--lab", labFile, "--node", "h1", "--port", "seqpacket-listen:/x", "extra"}, "unexpected arguments"},
		{[]string{"--bogus"}, "bogus"},
	} {
		var out bytes.Buffer
		err := run(c.args, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error containing %q", c.args, err, c.want)
		}
		if strings.Contains(out.String(), "ready") {
			t.Errorf("%q: printed ready", c.args)
		}
	}
}

// TestDaemonLifecycle runs the built command (no TAP, so no root
// needed): it prints ready once its port listens, answers on its control
// socket (mode 0600), and on SIGTERM exits 0 and removes the socket files
// it created.
func TestDaemonLifecycle(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "emunic")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ctl, link := filepath.Join(dir, "ctl.sock"), filepath.Join(dir, "link.sock")
	cmd := exec.Command(bin, "--lab", writeLab(t), "--node", "h1", "--port", "seqpacket-listen:"+link,
		"--control", ctl, "--time-dilation", "4", "--log", filepath.Join(dir, "log"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		b, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("first line %q, %v; log:\n%s", line, err, b)
	}
	for _, p := range []string{ctl, link} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", p, err, fi)
		}
	}
	c, err := nicd.Dial(ctl)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Status()
	if err != nil {
		t.Fatal(err)
	}
	if st.Node != "h1" || st.Link != nicd.LinkWaiting || st.TimeDilation != 4 || st.TAP != "" {
		t.Errorf("status %+v", st)
	}
	c.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit 10 s after SIGTERM")
	}
	for _, p := range []string{ctl, link} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", p, err)
		}
	}
}
