package rt

import (
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timerfdAlarm is a CLOCK_MONOTONIC timerfd in non-blocking mode, so that
// os.NewFile registers it with the runtime's netpoller: the goroutine
// reading it parks without holding a thread and is woken by the same
// epoll_pwait that waits for the lab's sockets, at the timer's time.
type timerfdAlarm struct {
	fd   int
	f    *os.File
	rc   syscall.RawConn
	done chan struct{}
}

func newTimerfdAlarm(signal func()) (*timerfdAlarm, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	a := &timerfdAlarm{fd: fd, f: os.NewFile(uintptr(fd), "timerfd"), done: make(chan struct{})}
	if a.rc, err = a.f.SyscallConn(); err != nil {
		a.f.Close()
		return nil, err
	}
	go a.run(signal)
	return a, nil
}

// run reads expirations (an 8-byte count each) until the file is closed.
// The reads, like the settime calls below, are raw system calls (see
// rawio_linux.go): the alarm is armed and fires as often as frames pass.
func (a *timerfdAlarm) run(signal func()) {
	defer close(a.done)
	var buf [8]byte
	var errno error
	read := func(fd uintptr) bool {
		for {
			_, errno = rawRead(fd, buf[:])
			if errno != unix.EINTR {
				return errno != unix.EAGAIN // EAGAIN: the poller waits for the expiration
			}
		}
	}
	for {
		if err := a.rc.Read(read); err != nil || errno != nil {
			return // closed (a timerfd read fails no other way)
		}
		signal()
	}
}

func (a *timerfdAlarm) reset(d time.Duration) {
	// A zero it_value disarms a timerfd: "now" is the next nanosecond.
	its := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	a.settime(&its)
}

func (a *timerfdAlarm) stop() {
	var its unix.ItimerSpec
	a.settime(&its)
}

// settime is timerfd_settime(2) as a raw system call; it cannot block.
func (a *timerfdAlarm) settime(its *unix.ItimerSpec) {
	unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(a.fd), 0, uintptr(unsafe.Pointer(its)), 0, 0, 0)
}

func (a *timerfdAlarm) close() {
	a.stop()
	a.f.Close() // unblocks run's Read
	<-a.done
}
