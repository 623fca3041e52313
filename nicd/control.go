package nicd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/emufabric/emufabric/internal/ctlline"
	"github.com/emufabric/emufabric/internal/ctlsock"
	"golang.org/x/sys/unix"
)

// maxQueuedFDs bounds the descriptors a connection may send ahead of the
// requests that use them; more are closed at once.
const maxQueuedFDs = 16

// controlServer serves the control socket.
type controlServer struct {
	d    *Daemon
	ln   *net.UnixListener
	path string
	wg   sync.WaitGroup

	mu sync.Mutex
	// conns are the open connections; true for one that carries a
	// capture, which close lets finish its stream (capture.go).
	conns map[*net.UnixConn]bool
}

// listenControl creates the control socket (mode 0600: it drives the
// NIC and maps memory, so only its owner may connect) and serves it.
func listenControl(d *Daemon, path string) (*controlServer, error) {
	if err := removeStaleSocket(path, "unix"); err != nil {
		return nil, fmt.Errorf("--control %s: %w", path, err)
	}
	// Create the socket with no permissions for others from the start,
	// then set exactly 0600.
	old := unix.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("--control %s: %w", path, ctlsock.BindError(path, err))
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("--control %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	s := &controlServer{d: d, ln: ln, path: path, conns: map[*net.UnixConn]bool{}}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

func (s *controlServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.conns == nil {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = false
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// close stops accepting, removes the socket file and closes every
// connection (their sessions are released as they end). A capture's
// connection is left to its writer, which ends the stream (the records
// still queued, the statistics block) and closes it: its reads end now
// and its writes may take captureEndWrite more.
func (s *controlServer) close() {
	s.ln.Close()
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for c, capturing := range conns {
		if capturing {
			c.SetReadDeadline(time.Now())
			c.SetWriteDeadline(time.Now().Add(captureEndWrite))
			continue
		}
		c.Close()
	}
}

// captureEndWrite is how long a capture's last writes may take once the
// daemon stops: a client that reads nothing cannot hold Close up.
const captureEndWrite = time.Second

// capturing marks c as a capture's connection; false if the server is
// closing (the capture is not to start).
func (s *controlServer) capturing(c *net.UnixConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		return false
	}
	s.conns[c] = true
	return true
}

func (s *controlServer) wait() { s.wg.Wait() }

// fdReader reads a unix stream connection and keeps the descriptors that
// arrive with the bytes (SCM_RIGHTS) in arrival order. A client sends a
// reg_mr line and its memfd in one sendmsg, so the descriptor is queued no
// later than the line's first byte is read.
type fdReader struct {
	c   *net.UnixConn
	oob []byte
	fds []int
}

func (r *fdReader) Read(p []byte) (int, error) {
	n, oobn, _, _, err := r.c.ReadMsgUnix(p, r.oob)
	n = max(n, 0)
	if oobn > 0 {
		// The net package receives with MSG_CMSG_CLOEXEC.
		msgs, perr := unix.ParseSocketControlMessage(r.oob[:oobn])
		if perr == nil {
			for _, m := range msgs {
				fds, ferr := unix.ParseUnixRights(&m)
				if ferr != nil {
					continue
				}
				for _, fd := range fds {
					if len(r.fds) >= maxQueuedFDs {
						unix.Close(fd)
						continue
					}
					r.fds = append(r.fds, fd)
				}
			}
		}
	}
	return n, err
}

// takeFD returns the oldest queued descriptor, or -1.
func (r *fdReader) takeFD() int {
	if len(r.fds) == 0 {
		return -1
	}
	fd := r.fds[0]
	r.fds = r.fds[1:]
	return fd
}

func (r *fdReader) closeAll() {
	for _, fd := range r.fds {
		unix.Close(fd)
	}
	r.fds = nil
}

func (s *controlServer) serveConn(c *net.UnixConn) {
	defer c.Close()
	fr := &fdReader{c: c, oob: make([]byte, unix.CmsgSpace(4*maxQueuedFDs))}
	defer fr.closeAll()
	br := bufio.NewReaderSize(fr, 64<<10)
	sess := newSession(s.d)
	defer sess.release()
	enc := json.NewEncoder(c)
	for {
		line, err := ctlline.Read(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				_ = enc.Encode(&Response{Error: err.Error()})
			}
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var req Request
		var resp *Response
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			resp = &Response{Error: "bad request: " + err.Error()}
		} else if len(bytes.TrimSpace(line[dec.InputOffset():])) > 0 {
			// One request per line, as emuswitch takes them: a second
			// object on the line was dropped without an answer.
			resp = &Response{Error: "bad request: more than one JSON value on the line (one request per line)"}
		} else if req.Op == "capture" {
			for _, p := range req.Ports {
				if p != s.d.cfg.Port {
					resp = &Response{Error: fmt.Sprintf("capture: port %q: this NIC's port is %q", p, s.d.cfg.Port)}
				}
			}
			if resp != nil {
				if err := enc.Encode(resp); err != nil {
					return
				}
				continue
			}
			// After the OK line the connection is a pcapng stream.
			if !s.capturing(c) {
				return
			}
			if err := enc.Encode(&Response{OK: true}); err != nil {
				return
			}
			if err := s.d.streamCapture(c, br, req.PadLinks); err != nil {
				s.d.log.Printf("capture: %v", err)
			}
			return
		} else if req.Op == "perf_bw" || req.Op == "perf_lat" || req.Op == "perf_recv" || req.Op == "perf_pong" {
			// The run takes as long as the client asked (-D): if the
			// client goes away meanwhile (Ctrl-C), the run stops.
			resp = s.whileConnected(c, br, sess, func() *Response { return s.d.handle(sess, &req, fr) })
		} else {
			resp = s.d.handle(sess, &req, fr)
		}
		if err := enc.Encode(resp); err != nil {
			return
		}
	}
}

// whileConnected runs fn with sess.gone closed as soon as the client's end
// of c is closed (a read finds EOF). The watch ends with fn: a read
// deadline in the past unblocks it, and a client that sent more meanwhile
// keeps its bytes in br.
func (s *controlServer) whileConnected(c *net.UnixConn, br *bufio.Reader, sess *session, fn func() *Response) *Response {
	gone := make(chan struct{})
	watched := make(chan struct{})
	sess.gone = gone
	go func() {
		defer close(watched)
		if _, err := br.Peek(1); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			close(gone)
		}
	}()
	resp := fn()
	_ = c.SetReadDeadline(time.Now())
	<-watched
	_ = c.SetReadDeadline(time.Time{})
	sess.gone = nil
	return resp
}

// removeStaleSocket removes path if it is a socket nobody listens on (left
// by a daemon that was killed with SIGKILL), so a restarted daemon can bind
// it. A live listener, or a file that is not a socket, is left alone and
// the bind fails as it should.
func removeStaleSocket(path, network string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return nil
	}
	c, err := net.DialTimeout(network, path, time.Second)
	if err == nil {
		c.Close()
		return ctlsock.LiveError(path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
