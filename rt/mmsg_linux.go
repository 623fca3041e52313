package rt

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsghdr is struct mmsghdr from <sys/socket.h>; x/sys/unix has no
// definition. Go pads the struct to the alignment of Msghdr exactly as C
// does, so an array of it matches the kernel's layout.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// mmsgBatch is the per-direction scratch for recvmmsg/sendmmsg, allocated
// once per transport so the per-batch path allocates nothing.
type mmsgBatch struct {
	msgs []mmsghdr
	iovs []unix.Iovec

	// One system call's arguments and results. The callbacks handed to
	// syscall.RawConn are method values made once here: a closure made
	// per call would escape and allocate on every batch.
	n      int
	got    int
	errno  syscall.Errno
	recvFn func(fd uintptr) bool
	sendFn func(fd uintptr) bool
}

func newMmsgBatch(n int) *mmsgBatch {
	m := &mmsgBatch{msgs: make([]mmsghdr, n), iovs: make([]unix.Iovec, n)}
	m.recvFn = m.recv
	m.sendFn = m.send
	return m
}

func (m *mmsgBatch) recv(fd uintptr) bool { return m.call(unix.SYS_RECVMMSG, fd) }
func (m *mmsgBatch) send(fd uintptr) bool { return m.call(unix.SYS_SENDMMSG, fd) }

// call makes one non-blocking recvmmsg/sendmmsg; it returns false to wait
// for the poller when the socket is not ready. Raw: MSG_DONTWAIT never
// blocks (rawio_linux.go says why that matters).
func (m *mmsgBatch) call(trap, fd uintptr) bool {
	r, _, e := unix.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&m.msgs[0])), uintptr(m.n), unix.MSG_DONTWAIT, 0, 0)
	for e == unix.EINTR {
		// Again at once: the poller, edge-triggered, would wait for a
		// readiness that the queued messages may never signal again.
		r, _, e = unix.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&m.msgs[0])), uintptr(m.n), unix.MSG_DONTWAIT, 0, 0)
	}
	if e == unix.EAGAIN {
		return false
	}
	m.errno, m.got = e, int(r)
	return true
}

// prepare points message i at b.
func (m *mmsgBatch) prepare(i int, b []byte) {
	m.iovs[i].Base = nil
	if len(b) > 0 {
		m.iovs[i].Base = &b[0]
	}
	m.iovs[i].SetLen(len(b))
	m.msgs[i] = mmsghdr{}
	m.msgs[i].hdr.Iov = &m.iovs[i]
	m.msgs[i].hdr.SetIovlen(1)
}

// recvmmsg reads up to len(bufs) messages into bufs[i][offset:] through
// rc, waiting for the first one with the runtime poller (so Close of the
// owning net.Conn unblocks it). A truncated message (MSG_TRUNC: the frame
// was larger than the buffer) is reported as size -1.
func recvmmsg(rc syscall.RawConn, m *mmsgBatch, bufs [][]byte, sizes []int, offset int) (int, error) {
	n := min(len(bufs), len(m.msgs), len(sizes))
	if n == 0 {
		return 0, nil
	}
	for i := 0; i < n; i++ {
		m.prepare(i, bufs[i][offset:])
	}
	m.n = n
	err := rc.Read(m.recvFn)
	if err != nil {
		return 0, closedErr(err)
	}
	if m.errno != 0 {
		return 0, os.NewSyscallError("recvmmsg", m.errno)
	}
	got := m.got
	if got == 0 {
		// A stream-like EOF: the peer closed a SOCK_SEQPACKET connection.
		return 0, io.EOF
	}
	for i := 0; i < got; i++ {
		sizes[i] = int(m.msgs[i].n)
		if m.msgs[i].hdr.Flags&unix.MSG_TRUNC != 0 {
			sizes[i] = -1
		}
	}
	return got, nil
}

// sendmmsg writes bufs[i][offset:] for all i, looping until every message
// went or an error occurred; it waits with the poller when the socket
// buffer is full.
func sendmmsg(rc syscall.RawConn, m *mmsgBatch, bufs [][]byte, offset int) (int, error) {
	sent := 0
	for sent < len(bufs) {
		n := min(len(bufs)-sent, len(m.msgs))
		for i := 0; i < n; i++ {
			m.prepare(i, bufs[sent+i][offset:])
		}
		m.n = n
		err := rc.Write(m.sendFn)
		if err != nil {
			return sent, closedErr(err)
		}
		if m.errno != 0 {
			return sent, os.NewSyscallError("sendmmsg", m.errno)
		}
		sent += m.got
	}
	return sent, nil
}

// closedErr maps the poller's "use of closed" errors to ErrClosed.
func closedErr(err error) error {
	if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) {
		return errors.Join(ErrClosed, err)
	}
	return err
}
