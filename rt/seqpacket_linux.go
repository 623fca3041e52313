package rt

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// Seqpacket is a link over a connected unix SOCK_SEQPACKET socket: one
// message is one frame, message boundaries and order are kept by the
// kernel, and nothing is lost (a full socket buffer blocks the writer,
// which is the back-pressure a wire does not have; the pacer upstream keeps
// the buffer shallow).
type Seqpacket struct {
	conn  *net.UnixConn
	rc    syscall.RawConn
	batch int
	rmu   sync.Mutex // serializes Read: the mmsg scratch is per direction
	rx    *mmsgBatch
	wmu   sync.Mutex
	tx    *mmsgBatch
}

var _ Link = (*Seqpacket)(nil)

// SeqpacketListener accepts Seqpacket links on a socket file. Close removes
// the file.
type SeqpacketListener struct {
	l    *net.UnixListener
	path string
}

// ListenSeqpacket creates the socket file path (which must not exist; a
// stale file left by a killed process is the caller's to remove, see the
// lab state directory) with mode 0600 and listens on it.
func ListenSeqpacket(path string) (*SeqpacketListener, error) {
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, err
	}
	// Links carry a lab's traffic: only the owner may attach.
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	l.SetUnlinkOnClose(true)
	return &SeqpacketListener{l: l, path: path}, nil
}

// Accept waits for one peer and returns the link to it.
func (l *SeqpacketListener) Accept() (*Seqpacket, error) {
	c, err := l.l.AcceptUnix()
	if err != nil {
		return nil, closedErr(err)
	}
	return newSeqpacket(c)
}

// Path is the socket file.
func (l *SeqpacketListener) Path() string { return l.path }

// Close stops listening, unblocks Accept and removes the socket file.
func (l *SeqpacketListener) Close() error { return l.l.Close() }

// DialSeqpacket connects to a SeqpacketListener's socket file.
func DialSeqpacket(path string) (*Seqpacket, error) {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, err
	}
	return newSeqpacket(c)
}

// SeqpacketPair returns two connected links (socketpair), for tests and
// for in-process wiring.
func SeqpacketPair() (*Seqpacket, *Seqpacket, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	var links [2]*Seqpacket
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), fmt.Sprintf("seqpacket-pair-%d", i))
		c, err := net.FileConn(f) // dups fd; FileConn sets it non-blocking
		f.Close()
		if err != nil {
			if i == 1 {
				links[0].Close()
			} else {
				syscall.Close(fds[1])
			}
			return nil, nil, err
		}
		uc, ok := c.(*net.UnixConn)
		if !ok {
			c.Close()
			return nil, nil, errors.New("rt: socketpair is not a unix socket")
		}
		links[i], err = newSeqpacket(uc)
		if err != nil {
			return nil, nil, err
		}
	}
	return links[0], links[1], nil
}

func newSeqpacket(c *net.UnixConn) (*Seqpacket, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	// Frames up to 9.6 KB, a batch of 64 each way: give the kernel room for
	// a few batches so a writer does not stall on every sendmmsg.
	_ = c.SetReadBuffer(4 << 20)
	_ = c.SetWriteBuffer(4 << 20)
	return &Seqpacket{
		conn:  c,
		rc:    rc,
		batch: DefaultBatchSize,
		rx:    newMmsgBatch(DefaultBatchSize),
		tx:    newMmsgBatch(DefaultBatchSize),
	}, nil
}

// BatchSize implements Link.
func (s *Seqpacket) BatchSize() int { return s.batch }

// Read implements Link. A message larger than the buffer is dropped and
// reported as ErrFrameTooLarge, together with the n good frames of the
// batch. The peer closing the connection gives io.EOF.
func (s *Seqpacket) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	n, err := recvmmsg(s.rc, s.rx, bufs, sizes, offset)
	if err != nil {
		return 0, err
	}
	return compactBatch(bufs, sizes, offset, n)
}

// compactBatch removes truncated (size -1) and empty messages from a
// received batch, copying later frames forward (a rare path: only a
// misconfigured MTU truncates) so the caller's buffers keep their order. A
// zero-length message on a SOCK_SEQPACKET socket is the peer's orderly
// shutdown.
func compactBatch(bufs [][]byte, sizes []int, offset, n int) (int, error) {
	var errOut error
	k := 0
	for i := 0; i < n; i++ {
		switch {
		case sizes[i] == 0:
			if k == 0 {
				return 0, io.EOF
			}
			return k, nil
		case sizes[i] < 0:
			errOut = ErrFrameTooLarge
			continue
		}
		if k != i {
			copy(bufs[k][offset:], bufs[i][offset:offset+sizes[i]])
			sizes[k] = sizes[i]
		}
		k++
	}
	return k, errOut
}

// Write implements Link.
func (s *Seqpacket) Write(bufs [][]byte, offset int) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return sendmmsg(s.rc, s.tx, bufs, offset)
}

// Close implements Link.
func (s *Seqpacket) Close() error { return s.conn.Close() }
