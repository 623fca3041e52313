// Package exitwith is the daemons' hidden --exit-with-pid flag: a daemon
// ends, as on SIGTERM, when another process ends. lab.Start passes the
// test process's pid, so a test binary that dies without running its
// cleanups (a panic in a parallel test, go test -timeout, Ctrl-C of the
// process group, kill -9) does not leave the lab's daemons running.
package exitwith

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ErrExited is the cause (context.Cause) of a context Context ended
// because its process exited.
var ErrExited = errors.New("the process of --exit-with-pid exited")

// pollInterval is how often the fallback looks at /proc/PID, on kernels
// without pidfd_open(2) (before 5.3) or where a sandbox forbids it.
const pollInterval = time.Second

// pidfdOpen is unix.PidfdOpen; a test replaces it to take the fallback.
var pidfdOpen = unix.PidfdOpen

// Context returns a copy of parent that is done when process pid exits,
// with a cause wrapping ErrExited that names the pid; cancel releases the
// watcher. A pid that does not exist is an error: the process the daemon
// should outlive no longer is.
func Context(parent context.Context, pid int) (context.Context, context.CancelFunc, error) {
	if pid <= 0 {
		return nil, nil, fmt.Errorf("--exit-with-pid %d: not a process id", pid)
	}
	ctx, cancel := context.WithCancelCause(parent)
	gone := func() { cancel(fmt.Errorf("pid %d: %w", pid, ErrExited)) }
	stop := func() { cancel(context.Canceled) }
	fd, err := pidfdOpen(pid, 0)
	switch {
	case err == nil:
		// A pidfd polls readable once the process has exited (zombie or
		// reaped): no wake-ups until then. A pipe closed by cancel ends
		// the watch early.
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			unix.Close(fd)
			cancel(nil)
			return nil, nil, fmt.Errorf("--exit-with-pid %d: %w", pid, err)
		}
		go watchPidfd(fd, p[0], gone)
		var once sync.Once
		return ctx, func() { once.Do(func() { stop(); unix.Close(p[1]) }) }, nil
	case errors.Is(err, unix.ESRCH):
		cancel(nil)
		return nil, nil, fmt.Errorf("--exit-with-pid %d: no such process", pid)
	}
	start, err := startTime(pid)
	if err != nil {
		cancel(nil)
		return nil, nil, fmt.Errorf("--exit-with-pid %d: no such process (%v)", pid, err)
	}
	go pollProc(ctx, pid, start, gone)
	return ctx, stop, nil
}

// watchPidfd waits until the process of pidfd exits (then calls gone) or
// the pipe's write end is closed, and closes both descriptors.
func watchPidfd(pidfd, stopfd int, gone func()) {
	defer unix.Close(pidfd)
	defer unix.Close(stopfd)
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}, {Fd: int32(stopfd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err == nil && fds[1].Revents != 0 {
			return // cancelled
		}
		// Readable, or poll failed (which it does not on valid
		// descriptors): either way the watch cannot go on, and a daemon
		// that stays up with no owner is what the flag is there to stop.
		gone()
		return
	}
}

// pollProc looks at /proc/PID every pollInterval until the process is
// gone (or a zombie, or the pid is another process's), then calls gone.
func pollProc(ctx context.Context, pid int, start uint64, gone func()) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if st, err := startTime(pid); err != nil || st != start {
			gone()
			return
		}
	}
}

// startTime is field 22 of /proc/PID/stat, the process's start time,
// which tells it from a later process with the same pid; a zombie is an
// error, it has exited.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("process %d has exited", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}
