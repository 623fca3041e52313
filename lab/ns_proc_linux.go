package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vishvananda/netns"

	"github.com/emufabric/emufabric/internal/ctlpeer"
)

// ProcSpec describes a daemon to start.
type ProcSpec struct {
	// Name identifies the process in the state directory (pidfile, log
	// file, record); the lab's name rules apply (e.g. "emunic-h1").
	Name string
	// Namespace is the namespace the process runs in ("" for the
	// caller's).
	Namespace string
	// Path and Args are the program and its arguments (Args excludes
	// argv[0]). No shell is involved: arguments are passed as they are.
	Path string
	Args []string
	// Env is the environment; nil inherits the caller's.
	Env []string
}

// Proc is a started daemon, supervised by this process.
type Proc struct {
	Name string
	Pid  int

	cmd   *exec.Cmd
	state *State
	log   *os.File
	done  chan struct{}
	err   error // the Wait result, after done is closed
	once  sync.Once
	// stopping: Stop was called, so an exit is expected (Lab.Health).
	stopping atomic.Bool
}

// Start starts a daemon: its own process group (so signals reach its
// children), stdout and stderr appended to log/<name>.log, a pidfile in
// run/<name>.pid, and a record in state.json with its start time. In a
// namespace, the child is forked from a thread switched into it, so it
// inherits the namespace from its first instruction; nothing runs through
// `ip netns exec` or a shell.
func (s *State) Start(spec ProcSpec) (*Proc, error) {
	if err := nsCheckFileName(spec.Name); err != nil {
		return nil, fmt.Errorf("process: %w", err)
	}
	logPath, _ := s.LogPath(spec.Name)
	pidPath, _ := s.PidPath(spec.Name)
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("process %s: %w", spec.Name, err)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = spec.Env
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	ns := netns.None()
	if spec.Namespace != "" {
		if err := nsCheckFileName(spec.Namespace); err != nil {
			lf.Close()
			return nil, fmt.Errorf("process %s: namespace: %w", spec.Name, err)
		}
		ns, err = netns.GetFromName(spec.Namespace)
		if err != nil {
			lf.Close()
			return nil, fmt.Errorf("process %s: namespace %s: %w", spec.Name, spec.Namespace, err)
		}
		defer ns.Close()
	}
	if err := nsOnThread(ns, cmd.Start); err != nil {
		lf.Close()
		return nil, fmt.Errorf("process %s: %w", spec.Name, err)
	}
	p := &Proc{Name: spec.Name, Pid: cmd.Process.Pid, cmd: cmd, state: s, log: lf, done: make(chan struct{})}
	go p.reap()
	st, _ := nsStartTime(p.Pid) // 0 if it already exited: Teardown then skips it
	if err := s.recordProc(nsProcEntry{Name: spec.Name, Namespace: spec.Namespace, Pid: p.Pid, StartTime: st}); err != nil {
		p.Stop(0)
		return nil, err
	}
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(p.Pid)+"\n"), 0o600); err != nil {
		p.Stop(0)
		return nil, fmt.Errorf("process %s: pidfile: %w", spec.Name, err)
	}
	return p, nil
}

// reap waits for the process so it never lingers as a zombie.
func (p *Proc) reap() {
	p.err = p.cmd.Wait()
	p.log.Close()
	close(p.done)
}

// Done is closed when the process has exited and was reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns its exit status.
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// Stop sends SIGTERM (and SIGCONT, for a stopped one) to the process
// group, waits up to grace, then sends SIGKILL, and waits until the
// process is reaped; it then removes the pidfile and the record. It
// returns the process's exit status unless that is just the signal Stop
// sent.
func (p *Proc) Stop(grace time.Duration) error {
	var err error
	p.stopping.Store(true)
	p.once.Do(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-p.Pid, syscall.SIGTERM)
			// A stopped process takes the SIGTERM only once continued.
			_ = syscall.Kill(-p.Pid, syscall.SIGCONT)
			t := time.NewTimer(grace)
			select {
			case <-p.done:
				t.Stop()
			case <-t.C:
				_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
				<-p.done
			}
		}
		var ee *exec.ExitError
		if errors.As(p.err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() &&
				(ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGKILL) {
				p.err = nil
			}
		}
		err = p.err
		if pp, e := p.state.PidPath(p.Name); e == nil {
			_ = os.Remove(pp)
		}
		if e := p.state.forgetProc(p.Name); e != nil && err == nil {
			err = e
		}
	})
	return err
}

// StartIn starts cmd inside the named namespace (as `ip netns exec`
// would, without a shell or an extra process): the child is forked from a
// thread switched into the namespace. For `exec NODE -- CMD`, perf runs
// and tests; daemons go through State.Start, which also records them.
func StartIn(namespace string, cmd *exec.Cmd) error {
	if err := nsCheckFileName(namespace); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	ns, err := netns.GetFromName(namespace)
	if err != nil {
		return fmt.Errorf("namespace %s: %w", namespace, err)
	}
	defer ns.Close()
	return nsOnThread(ns, cmd.Start)
}

// ProcStatus is a recorded daemon and whether it still runs.
type ProcStatus struct {
	Name      string
	Namespace string
	Pid       int
	Alive     bool
	// Stopped is, for a live daemon that runs nothing until it is
	// continued (kill -STOP, Ctrl-Z, a debugger), its state as
	// /proc/PID/stat says it ("stopped (SIGSTOP)"), and Resume what
	// continues it; both "" for a daemon that runs. A stopped daemon
	// answers nothing on its control socket and moves no frame: its
	// links look paused to its peers.
	Stopped, Resume string
}

// procStatus is the status of a recorded daemon.
func procStatus(p nsProcEntry) ProcStatus {
	ps := ProcStatus{Name: p.Name, Namespace: p.Namespace, Pid: p.Pid, Alive: p.StartTime != 0 && nsAlive(p.Pid, p.StartTime)}
	if ps.Alive {
		if st := ctlpeer.Read(p.Pid); st.Stopped() {
			ps.Stopped, ps.Resume = st.StateWord(), st.Hint()
		}
	}
	return ps
}

// Procs lists the recorded daemons with their liveness (the same pid
// with the same start time), for `status`.
func (s *State) Procs() []ProcStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ProcStatus, len(s.rec.Procs))
	for i, p := range s.rec.Procs {
		out[i] = procStatus(p)
	}
	return out
}

// nsProcStat is what Teardown needs from /proc/<pid>/stat.
type nsProcStat struct {
	State     byte
	Pgrp      int
	StartTime uint64
}

// nsReadStat parses /proc/<pid>/stat (proc(5)). The command name (field
// 2) is in parentheses and may itself hold spaces and parentheses, so
// parsing starts after the last ')'.
func nsReadStat(pid int) (nsProcStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nsProcStat{}, err
	}
	st, err := nsParseStat(b)
	if err != nil {
		return nsProcStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// nsParseStat parses the contents of a /proc/<pid>/stat file.
func nsParseStat(b []byte) (nsProcStat, error) {
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nsProcStat{}, errors.New("no command field")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[2] field 5 (pgrp), f[19] field 22 (starttime).
	if len(f) < 20 {
		return nsProcStat{}, fmt.Errorf("%d fields, want at least 22", len(f)+2)
	}
	if c := f[0]; len(c) != 1 || !(c[0] >= 'A' && c[0] <= 'Z' || c[0] >= 'a' && c[0] <= 'z') {
		return nsProcStat{}, fmt.Errorf("state %q is not a letter", c)
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return nsProcStat{}, fmt.Errorf("pgrp: %w", err)
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return nsProcStat{}, fmt.Errorf("starttime: %w", err)
	}
	return nsProcStat{State: f[0][0], Pgrp: pgrp, StartTime: st}, nil
}

// nsStartTime is the start time of pid, 0 if it is gone.
func nsStartTime(pid int) (uint64, error) {
	st, err := nsReadStat(pid)
	if err != nil {
		return 0, err
	}
	return st.StartTime, nil
}

// nsAlive reports whether pid exists, is not a zombie and, if startTime is
// not 0, is still the process that started then (not a reused pid).
func nsAlive(pid int, startTime uint64) bool {
	st, err := nsReadStat(pid)
	if err != nil || st.State == 'Z' || st.State == 'X' {
		return false
	}
	return startTime == 0 || st.StartTime == startTime
}

// nsWaitGone polls until pid is gone or a zombie, up to d.
func nsWaitGone(pid int, startTime uint64, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !nsAlive(pid, startTime) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// nsPidsIn lists the processes whose network namespace is the named one
// (as `ip netns pids`): every process in /proc whose ns/net is the same
// nsfs inode as /run/netns/<name>. The caller's own process is never
// listed.
func nsPidsIn(name string) ([]int, error) {
	var want syscall.Stat_t
	if err := syscall.Stat(NetnsDir+"/"+name, &want); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name()+"/ns/net", &st) != nil {
			continue // gone, or a kernel thread
		}
		if st.Dev == want.Dev && st.Ino == want.Ino {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
