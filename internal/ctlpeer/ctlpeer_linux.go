// Package ctlpeer names the daemon behind a control socket that did not
// answer, and says why it may not have: a daemon stopped by SIGSTOP (or a
// terminal's Ctrl-Z, or a debugger) still has its socket listening, so a
// client connects and writes its request, and then only a deadline ends
// the wait. The kernel knows who listens (SO_PEERCRED) and what that
// process is doing (/proc/PID/stat), so the error can say "emunic (pid
// 1234) is stopped (SIGSTOP)" rather than "i/o timeout".
package ctlpeer

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Pid is the pid of the process that listens on the other end of a
// connected unix socket (SO_PEERCRED: for a client, the credentials of
// the process that called listen(2), which a queued connection has before
// the daemon accepts it), or 0 when the connection is not a unix socket or
// the kernel does not say.
func Pid(c net.Conn) int {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	_ = raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// Proc is what /proc/PID/stat says of a process (proc(5)).
type Proc struct {
	Pid   int
	Comm  string // field 2, the command name without its parentheses
	State byte   // field 3: R, S, D, T, t, Z, X, I; 0 when the process is gone
}

// Read reads /proc/PID/stat; a process that is gone is a Proc with State 0.
func Read(pid int) Proc {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{Pid: pid}
	}
	p, err := Parse(b)
	if err != nil {
		return Proc{Pid: pid}
	}
	p.Pid = pid
	return p
}

// Parse parses the start of a /proc/PID/stat file: the command name is
// between the first '(' and the last ')', since it may itself hold spaces
// and parentheses, and the state is the field after it.
func Parse(b []byte) (Proc, error) {
	s := string(b)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return Proc{}, errors.New("no command field")
	}
	f := strings.Fields(s[close+1:])
	if len(f) == 0 || len(f[0]) != 1 {
		return Proc{}, errors.New("no state field")
	}
	return Proc{Comm: s[open+1 : close], State: f[0][0]}, nil
}

// Stopped reports whether the process is stopped: by a signal (T: SIGSTOP,
// SIGTSTP, SIGTTIN, SIGTTOU) or by a tracer (t). Either way it runs
// nothing, its control socket included, until it is continued.
func (p Proc) Stopped() bool { return p.State == 'T' || p.State == 't' }

// Gone reports whether the process has exited (or is a zombie, which
// answers nothing either).
func (p Proc) Gone() bool { return p.State == 0 || p.State == 'Z' || p.State == 'X' }

// StateWord says what the process is doing, in the words of ps(1)'s
// PROCESS STATE CODES: "stopped (SIGSTOP)" for T, the state a daemon is
// in after kill -STOP (or Ctrl-Z: the kernel does not tell which).
func (p Proc) StateWord() string {
	switch p.State {
	case 0:
		return "gone"
	case 'R':
		return "running"
	case 'S':
		return "sleeping"
	case 'D':
		return "in uninterruptible sleep (D: waiting on the kernel, usually I/O)"
	case 'T':
		return "stopped (SIGSTOP)"
	case 't':
		return "stopped by a debugger (tracing stop)"
	case 'Z':
		return "a zombie (exited, not yet reaped)"
	case 'X':
		return "dead"
	case 'I':
		return "idle"
	}
	return fmt.Sprintf("in state %c", p.State)
}

// What names the process: "emunic (pid 1234)".
func (p Proc) What() string {
	comm := p.Comm
	if comm == "" {
		comm = "process"
	}
	return fmt.Sprintf("%s (pid %d)", comm, p.Pid)
}

// Hint is what to do about the state, or "" when there is nothing to say.
func (p Proc) Hint() string {
	switch {
	case p.State == 'T':
		return fmt.Sprintf("`kill -CONT %d` resumes it", p.Pid)
	case p.State == 't':
		return "detach the debugger to resume it"
	}
	return ""
}

// NoAnswerError is a control request that a daemon did not answer in
// time. It unwraps to the deadline's error (a net.Error whose Timeout is
// true), so a caller that tells a timeout from a refusal still can.
type NoAnswerError struct {
	Path   string        // the control socket
	Proc   Proc          // the listener, Pid 0 when unknown
	Waited time.Duration // how long the client waited
	Err    error         // the deadline's error
}

func (e *NoAnswerError) Error() string {
	who := "the daemon"
	if e.Proc.Pid != 0 {
		who = e.Proc.What()
	}
	s := fmt.Sprintf("control %s: %s did not answer in %v", e.Path, who, e.Waited.Round(time.Millisecond))
	if e.Proc.Pid != 0 {
		s += ": it is " + e.Proc.StateWord()
		if h := e.Proc.Hint(); h != "" {
			s += "; " + h
		}
	}
	return s
}

func (e *NoAnswerError) Unwrap() error { return e.Err }

// Timeout reports whether err is a deadline that ran out (a net.Error
// with Timeout), as a NoAnswerError's cause is.
func Timeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// NoAnswer wraps a deadline error of a request on c (to the control
// socket path, after waiting waited) into a NoAnswerError naming the
// listener and its state; any other error is returned as it is.
func NoAnswer(c net.Conn, path string, waited time.Duration, err error) error {
	if !Timeout(err) {
		return err
	}
	e := &NoAnswerError{Path: path, Waited: waited, Err: err}
	if pid := Pid(c); pid != 0 {
		e.Proc = Read(pid)
	}
	return e
}
