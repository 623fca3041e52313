package nicd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/emufabric/emufabric/internal/ctlpeer"
	"github.com/emufabric/emufabric/nic"
	"golang.org/x/sys/unix"
)

// Client talks to one emunic's control socket. A perf run holds one
// Client per daemon: it registers a Buffer on each, creates a QP on each,
// hands each QP the other's QPInfo (Connect), then posts work requests and
// polls completions. Everything the Client created goes away when it is
// closed. Safe for concurrent use (requests are serialized).
//
// Every wait for an answer is bounded: a request the daemon answers at
// once by Timeout, poll_cq by its own timeout plus Timeout, and the perf
// loops (perf_bw, perf_lat, perf_recv, perf_pong), which run as long as
// the test, by the daemon's own wait for each completion (runWait). What
// no bound of the daemon's covers is the daemon not running at all: a
// daemon stopped by SIGSTOP keeps its socket, takes the request and
// answers nothing. So while it waits the client looks at the daemon's
// state (the socket's listener, /proc/PID/stat) every peerCheck, and a
// daemon stopped for StoppedWait fails the request with a
// ctlpeer.NoAnswerError that names it: "emunic (pid N) did not answer in
// 2s: it is stopped (SIGSTOP)".
type Client struct {
	// Timeout bounds the answer to a request the daemon answers at once;
	// Dial sets DefaultTimeout.
	Timeout time.Duration
	// StoppedWait is how long a stopped daemon may stay stopped while a
	// request waits; Dial sets DefaultStoppedWait.
	StoppedWait time.Duration

	mu     sync.Mutex
	c      *net.UnixConn
	r      *bufio.Reader
	path   string
	pid    int   // the daemon's (SO_PEERCRED), 0 if unknown
	broken error // a request failed mid-answer: the stream is out of step
}

const (
	// DefaultTimeout is a Client's Timeout: a request the daemon answers
	// at once takes microseconds; a loaded machine may stretch that to
	// seconds, not to half a minute.
	DefaultTimeout = 30 * time.Second
	// DefaultStoppedWait is a Client's StoppedWait: long enough for a
	// daemon stopped by accident to be continued, short enough that a
	// user is told before they reach for Ctrl-C.
	DefaultStoppedWait = 2 * time.Second
	// peerCheck is how often a waiting request looks at the daemon.
	peerCheck = 500 * time.Millisecond
)

// Dial connects to a control socket.
func Dial(path string) (*Client, error) {
	nc, err := net.DialTimeout("unix", path, DefaultTimeout)
	if err != nil {
		return nil, err
	}
	c := nc.(*net.UnixConn)
	return &Client{Timeout: DefaultTimeout, StoppedWait: DefaultStoppedWait,
		c: c, r: bufio.NewReaderSize(c, 64<<10), path: path, pid: ctlpeer.Pid(c)}, nil
}

// Close closes the connection; the daemon then destroys the session's QPs
// and unmaps its regions.
func (c *Client) Close() error { return c.c.Close() }

// Call sends one request (with fd as SCM_RIGHTS if fd >= 0) and returns
// the response; a response with ok false is returned with an error
// carrying the daemon's message.
func (c *Client) Call(req *Request, fd int) (*Response, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return nil, fmt.Errorf("%s: an earlier request on this connection failed: %w", req.Op, c.broken)
	}
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	// A request is a few KiB at most, which the socket's buffer takes even
	// from a daemon that reads nothing; the deadline is for the one that
	// does not.
	if err := c.c.SetWriteDeadline(time.Now().Add(c.Timeout)); err != nil {
		return nil, err
	}
	n, _, err := c.c.WriteMsgUnix(b, oob, nil)
	if err == nil && n < len(b) {
		_, err = c.c.Write(b[n:])
	}
	if err != nil {
		c.broken = err
		return nil, ctlpeer.NoAnswer(c.c, c.path, c.Timeout, err)
	}
	line, err := c.readAnswer(answerBound(req, c.Timeout))
	if err != nil {
		c.broken = err
		return nil, err
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("bad response: %w", err)
	}
	if !resp.OK {
		if strings.HasPrefix(resp.Error, req.Op+": ") {
			return &resp, errors.New(resp.Error) // the daemon named the op already
		}
		return &resp, fmt.Errorf("%s: %s", req.Op, resp.Error)
	}
	return &resp, nil
}

// answerBound is how long the answer to req may take: 0 for the perf
// loops, which run as long as the test and whose every wait the daemon
// bounds itself; poll_cq's own wait and then timeout; timeout for the rest.
func answerBound(req *Request, timeout time.Duration) time.Duration {
	switch req.Op {
	case "perf_bw", "perf_lat", "perf_recv", "perf_pong":
		return 0
	case "poll_cq":
		return time.Duration(req.TimeoutMs)*time.Millisecond + timeout
	}
	return timeout
}

// readAnswer reads one response line, waiting up to bound (0: as long as
// the daemon runs), and looks at the daemon every peerCheck meanwhile: one
// that was stopped for StoppedWait, or did not answer within bound, is a
// NoAnswerError naming it and its state.
func (c *Client) readAnswer(bound time.Duration) ([]byte, error) {
	start := time.Now()
	var line []byte
	var stoppedSince time.Time
	for {
		next := time.Now().Add(peerCheck)
		if end := start.Add(bound); bound > 0 && end.Before(next) {
			next = end
		}
		if err := c.c.SetReadDeadline(next); err != nil {
			return nil, err
		}
		part, err := c.r.ReadBytes('\n')
		line = append(line, part...) // a deadline keeps what came before it
		if err == nil {
			return line, c.c.SetReadDeadline(time.Time{})
		}
		if !ctlpeer.Timeout(err) {
			return nil, err
		}
		now := time.Now()
		p := ctlpeer.Read(c.pid)
		switch {
		case c.pid == 0 || !p.Stopped():
			stoppedSince = time.Time{}
		case stoppedSince.IsZero():
			stoppedSince = now
		}
		stoppedLong := !stoppedSince.IsZero() && now.Sub(stoppedSince) >= c.StoppedWait
		if stoppedLong || bound > 0 && now.Sub(start) >= bound {
			e := &ctlpeer.NoAnswerError{Path: c.path, Waited: now.Sub(start), Err: err}
			if c.pid != 0 {
				e.Proc = p
			}
			return nil, e
		}
	}
}

// Status returns the daemon's status.
func (c *Client) Status() (*Status, error) {
	r, err := c.Call(&Request{Op: "status"}, -1)
	if err != nil {
		return nil, err
	}
	return r.Status, nil
}

// Counters returns the NIC's counters: the response's Ports[0].Counters
// (ethtool names), HWCounters (RDMA), Transport, and the text layouts.
func (c *Client) Counters() (*Response, error) { return c.Call(&Request{Op: "counters"}, -1) }

// MlnxQos returns the `mlnx_qos -i` view of the NIC's QoS.
func (c *Client) MlnxQos() (string, error) {
	r, err := c.Call(&Request{Op: "mlnx_qos"}, -1)
	if err != nil {
		return "", err
	}
	return r.Text, nil
}

// Buffer is memory a program shares with a NIC: a memfd, sealed against
// shrinking (the daemon refuses others), mapped here and, once
// registered, in the daemon, which then reads and writes Bytes directly.
type Buffer struct {
	Bytes []byte
	fd    int
}

// NewBuffer creates a shared buffer of size bytes.
func NewBuffer(size int) (*Buffer, error) {
	if size <= 0 {
		return nil, errors.New("buffer: size must be > 0")
	}
	fd, err := unix.MemfdCreate("emunic-buffer", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ftruncate: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("seal: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return &Buffer{Bytes: mem, fd: fd}, nil
}

// Close unmaps the buffer here; a daemon that registered it keeps its own
// mapping until the region is deregistered or the session ends.
func (b *Buffer) Close() error {
	if b.fd < 0 {
		return nil
	}
	err := errors.Join(unix.Munmap(b.Bytes), unix.Close(b.fd))
	b.Bytes, b.fd = nil, -1
	return err
}

// RegMR registers the whole buffer with the NIC (ibv_reg_mr).
func (c *Client) RegMR(b *Buffer, access nic.AccessFlags) (*MRInfo, error) {
	r, err := c.Call(&Request{Op: "reg_mr", Length: uint64(len(b.Bytes)), Access: access}, b.fd)
	if err != nil {
		return nil, err
	}
	return r.MR, nil
}

// DeregMR deregisters a region.
func (c *Client) DeregMR(mr uint32) error {
	_, err := c.Call(&Request{Op: "dereg_mr", MR: mr}, -1)
	return err
}

// CreateCQ creates a completion queue of at least cqe entries.
func (c *Client) CreateCQ(cqe int) (uint32, error) {
	r, err := c.Call(&Request{Op: "create_cq", CQE: cqe}, -1)
	if err != nil {
		return 0, err
	}
	return r.CQ, nil
}

// QPCreate sizes a QP.
type QPCreate struct {
	Type               string // "rc" (default) or "uc"
	SendCQ, RecvCQ     uint32
	MaxSendWR, MaxRecv int
}

// CreateQP creates a QP and returns what its peer needs to connect.
func (c *Client) CreateQP(a QPCreate) (*QPInfo, error) {
	r, err := c.Call(&Request{Op: "create_qp", QPType: a.Type, SendCQ: a.SendCQ, RecvCQ: a.RecvCQ,
		MaxSendWR: a.MaxSendWR, MaxRecvWR: a.MaxRecv}, -1)
	if err != nil {
		return nil, err
	}
	return r.QP, nil
}

// Connect brings the QP to RTS facing remote (nil attr: defaults).
func (c *Client) Connect(qp uint32, remote *QPInfo, attr *ConnectAttr) error {
	rem := *remote
	rem.Handle = 0
	_, err := c.Call(&Request{Op: "connect", QP: qp, Remote: &rem, Attr: attr}, -1)
	return err
}

// DestroyQP destroys a QP.
func (c *Client) DestroyQP(qp uint32) error {
	_, err := c.Call(&Request{Op: "destroy_qp", QP: qp}, -1)
	return err
}

// PostSend posts wr repeat times (WRIDs wr.WRID, wr.WRID+1, ...) and
// returns how many were posted.
func (c *Client) PostSend(qp uint32, wr *WorkRequest, repeat int) (int, error) {
	r, err := c.Call(&Request{Op: "post_send", QP: qp, WR: wr, Repeat: repeat}, -1)
	if r == nil {
		return 0, err
	}
	return r.Posted, err
}

// PerfBW runs perftest's bandwidth loop in the daemon (perf_bw.go) and
// returns when it is done.
func (c *Client) PerfBW(p *BWParams) (*BWResult, error) {
	r, err := c.Call(&Request{Op: "perf_bw", BW: p}, -1)
	if err != nil {
		return nil, err
	}
	if r.BW == nil {
		return nil, errors.New("perf_bw: no result")
	}
	return r.BW, nil
}

// PerfRecv runs the responder's side of a SEND test in the daemon
// (perf_recv.go) and returns when every message has been received.
func (c *Client) PerfRecv(p *RecvParams) (*RecvResult, error) {
	r, err := c.Call(&Request{Op: "perf_recv", Recv: p}, -1)
	if err != nil {
		return nil, err
	}
	if r.Recv == nil {
		return nil, errors.New("perf_recv: no result")
	}
	return r.Recv, nil
}

// PerfPong runs the server's side of a ping-pong latency run in the
// daemon (perf_pong.go) and returns when every message has been answered
// and the answers have completed.
func (c *Client) PerfPong(p *PongParams) error {
	_, err := c.Call(&Request{Op: "perf_pong", Pong: p}, -1)
	return err
}

// PerfLat runs ib_write_lat / ib_read_lat's loop in the daemon and
// returns each message's post-to-completion time.
func (c *Client) PerfLat(p *LatParams) ([]time.Duration, error) {
	r, err := c.Call(&Request{Op: "perf_lat", Lat: p}, -1)
	if err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(r.LatNs))
	for i, ns := range r.LatNs {
		out[i] = time.Duration(ns)
	}
	return out, nil
}

// PostRecv posts a receive work request repeat times.
func (c *Client) PostRecv(qp uint32, wr *WorkRequest, repeat int) (int, error) {
	r, err := c.Call(&Request{Op: "post_recv", QP: qp, WR: wr, Repeat: repeat}, -1)
	if r == nil {
		return 0, err
	}
	return r.Posted, err
}

// PollCQ returns up to max completions, waiting up to timeout until at
// least min are there (min 0: never waits).
func (c *Client) PollCQ(cq uint32, max, min int, timeout time.Duration) ([]WC, error) {
	ms := int(timeout / time.Millisecond)
	if timeout > 0 && ms == 0 {
		ms = 1
	}
	r, err := c.Call(&Request{Op: "poll_cq", CQ: cq, Max: max, Min: min, TimeoutMs: ms}, -1)
	if r == nil {
		return nil, err
	}
	return r.WC, err
}
