package rt

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdAlarm is a CLOCK_MONOTONIC timerfd in non-blocking mode, so that
// os.NewFile registers it with the runtime's netpoller: the goroutine
// reading it parks without holding a thread and is woken by the same
// epoll_pwait that waits for the lab's sockets, at the timer's time.
type timerfdAlarm struct {
	fd   int
	f    *os.File
	done chan struct{}
}

func newTimerfdAlarm(signal func()) (*timerfdAlarm, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	a := &timerfdAlarm{fd: fd, f: os.NewFile(uintptr(fd), "timerfd"), done: make(chan struct{})}
	go a.run(signal)
	return a, nil
}

// run reads expirations (an 8-byte count each) until the file is closed.
func (a *timerfdAlarm) run(signal func()) {
	defer close(a.done)
	var buf [8]byte
	for {
		if _, err := a.f.Read(buf[:]); err != nil {
			return // closed
		}
		signal()
	}
}

func (a *timerfdAlarm) reset(d time.Duration) {
	// A zero it_value disarms a timerfd: "now" is the next nanosecond.
	its := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	unix.TimerfdSettime(a.fd, 0, &its, nil)
}

func (a *timerfdAlarm) stop() {
	var its unix.ItimerSpec
	unix.TimerfdSettime(a.fd, 0, &its, nil)
}

func (a *timerfdAlarm) close() {
	a.stop()
	a.f.Close() // unblocks run's Read
	<-a.done
}
