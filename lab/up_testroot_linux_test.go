package lab

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashChildEnv runs TestStartCrashChild in the child process of
// TestStartCrash, with the daemons' directory.
const crashChildEnv = "EMUFABRIC_TEST_CRASH_CHILD_BIN"

// crashReport is what the child tells its parent before it dies.
type crashReport struct {
	ProcessDir string
	StateRoot  string
	Lab        string
	Pids       []int
}

// TestStartCrashChild is the test process of TestStartCrash that dies
// with its lab up, without running any cleanup.
func TestStartCrashChild(t *testing.T) {
	bin := os.Getenv(crashChildEnv)
	if bin == "" {
		t.Skip("run by TestStartCrash")
	}
	l := Start(t, LoadUnique(t, "../examples/two-hosts.yaml"), UpOptions{BinDir: bin})
	r := crashReport{ProcessDir: proc.dir, StateRoot: l.State.Root, Lab: l.Spec.Name}
	for _, n := range []string{"sw1", "h1", "h2"} {
		r.Pids = append(r.Pids, l.Proc(n).Pid)
	}
	b, _ := json.Marshal(r)
	os.Stdout.Write(append([]byte("crash-report "), append(b, '\n')...))
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
}

// TestStartCrash: a test process killed with its lab up (kill -9: no
// cleanup runs, as after go test -timeout or a panic in a parallel test)
// takes the lab's daemons with it, has logged how to remove the rest, and
// the next Start's sweep removes the namespaces, the state and the
// process's directory; a directory whose process lives is not swept.
func TestStartCrash(t *testing.T) {
	SkipUnlessRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestStartCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+BuildDaemons(t))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, want killed\n%s", err, out)
	}
	var r crashReport
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if b, ok := strings.CutPrefix(sc.Text(), "crash-report "); ok {
			if err := json.Unmarshal([]byte(b), &r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if r.Lab == "" || len(r.Pids) != 3 {
		t.Fatalf("child did not report its lab:\n%s", out)
	}
	// Whatever happens below, the lab goes.
	t.Cleanup(func() { Down(r.StateRoot, r.Lab, 0); os.RemoveAll(r.ProcessDir) })

	if want := "`emulab down --state-dir " + r.StateRoot + " " + r.Lab + "` removes it"; !strings.Contains(string(out), want) {
		t.Errorf("the child's log lacks %q:\n%s", want, out)
	}
	for _, pid := range r.Pids {
		if !nsWaitGone(pid, 0, 10*time.Second) {
			t.Errorf("daemon pid %d still runs 10 s after its test process died", pid)
		}
	}
	if !NamespaceExists(NamespacePrefix + r.Lab + "-sw1") {
		t.Fatalf("namespace of sw1 gone before the sweep: nothing left to test")
	}

	// Our own directory is not swept: this process lives.
	mine, err := processDir()
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	say := func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	if err := sweepProcessDir(mine, say); err != nil || len(said) > 0 {
		t.Errorf("sweep of a live process's directory: %v, %q", err, said)
	}
	if _, err := os.Stat(filepath.Join(mine, ownerFile)); err != nil {
		t.Errorf("a live process's directory was swept: %v", err)
	}

	if err := sweepProcessDir(r.ProcessDir, say); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "removed lab "+r.Lab+", left by test process ") {
		t.Errorf("sweep said %q", said)
	}
	for _, n := range []string{"sw1", "h1", "h2"} {
		if NamespaceExists(NamespacePrefix + r.Lab + "-" + n) {
			t.Errorf("namespace of %s left after the sweep", n)
		}
	}
	if _, err := os.Stat(r.ProcessDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead process's directory is still there: %v", err)
	}
}

// skipChildEnv runs TestStartSkipChild in the children of
// TestStartSweepsWhenSkipped, with the lab file to load.
const skipChildEnv = "EMUFABRIC_TEST_SKIP_CHILD_LAB"

// TestStartSkipChild is a test process that is not root: LoadUnique
// makes its directory, Start skips.
func TestStartSkipChild(t *testing.T) {
	file := os.Getenv(skipChildEnv)
	if file == "" {
		t.Skip("run by TestStartSweepsWhenSkipped")
	}
	Start(t, LoadUnique(t, file))
	t.Errorf("Start did not skip (uid %d)", os.Geteuid())
}

// TestStartSweepsWhenSkipped: a test process that is not root, whose
// Start skips, still sweeps what earlier such processes left in the
// user's test root (the directory LoadUnique made): every skipped `go
// test` of a user would otherwise leave one more for good, as no root
// process sweeps another user's root.
func TestStartSweepsWhenSkipped(t *testing.T) {
	SkipUnlessRoot(t)
	const nobody = 65534
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp("", "skip-sweep-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	// The child runs as nobody: a copy of this test binary and of the
	// lab file that nobody can read.
	bin, file := filepath.Join(tmp, "lab.test"), filepath.Join(tmp, "two-hosts.yaml")
	for src, dst := range map[string]string{exe: bin, "../examples/two-hosts.yaml": file} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(tmp, fmt.Sprintf("emufabric-test-%d", nobody))
	run := func() []string {
		cmd := exec.Command(bin, "-test.run=^TestStartSkipChild$", "-test.v")
		cmd.Dir = tmp
		cmd.Env = []string{"TMPDIR=" + tmp, skipChildEnv + "=" + file}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- SKIP: TestStartSkipChild") {
			t.Fatalf("child as uid %d: %v\n%s", nobody, err, out)
		}
		ents, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		var dirs []string
		for _, e := range ents {
			dirs = append(dirs, e.Name())
		}
		return dirs
	}
	first := run()
	if len(first) != 1 {
		t.Fatalf("after one skipped run, %s holds %q, want its process's directory", root, first)
	}
	if second := run(); len(second) != 1 || second[0] == first[0] {
		t.Errorf("after a second skipped run, %s holds %q: the first's %s was not swept", root, second, first[0])
	}
}
