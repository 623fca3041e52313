package lab

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/emufabric/emufabric/internal/ctlpeer"
)

// Client side of the daemons' run-time operations (counters, link changes,
// live capture) as `emulab stats`, `emulab link` and `emulab capture` use
// them. The daemons own the protocol (the comments at the top of
// swd/control.go and nicd/protocol.go); this package cannot import them
// (they import lab), so the responses are decoded into the fields both
// share, as DaemonPorts does.

// DaemonCounters is a counters response of emuswitch or emunic.
type DaemonCounters struct {
	// Ports are the per-port counters by name (mlx5 `ethtool -S` names
	// and the daemon's own); emunic has one port.
	Ports []PortCounterSet `json:"ports"`
	// The rest is emunic's: the RDMA hw_counters, the transports'
	// counters, and the text layouts the NIC prints itself.
	HWCounters map[string]uint64 `json:"hw_counters,omitempty"`
	Transport  map[string]uint64 `json:"transport,omitempty"`
	Ethtool    string            `json:"ethtool,omitempty"` // `ethtool -S` layout
	RDMA       string            `json:"rdma,omitempty"`    // `rdma statistic show link DEV/1` layout
}

// PortCounterSet is one port's counters.
type PortCounterSet struct {
	Port     string            `json:"port"`
	Counters map[string]uint64 `json:"counters"`
}

// QueryCounters asks a daemon for its counters with {"op":"counters"}. A
// non-empty port narrows an emuswitch answer to that port (emunic has one
// port and takes no port field).
func QueryCounters(control, port string, timeout time.Duration) (*DaemonCounters, error) {
	req := struct {
		Op   string `json:"op"`
		Port string `json:"port,omitempty"`
	}{"counters", port}
	var r DaemonCounters
	if err := ControlRequest(control, req, &r, timeout); err != nil {
		return nil, err
	}
	return &r, nil
}

// LinkChange is a run-time change of one port's link: the fields of the
// daemons' link op. Empty strings and nil pointers leave a parameter as it
// is.
type LinkChange struct {
	Port    string   `json:"port,omitempty"`
	State   string   `json:"state,omitempty"` // "up" or "down"
	Rate    string   `json:"rate,omitempty"`  // a rate ParseRate accepts
	Delay   string   `json:"delay,omitempty"` // a time ParseTime accepts
	Loss    *float64 `json:"loss,omitempty"`  // a probability in [0, 1]
	Corrupt *float64 `json:"corrupt,omitempty"`
	// Schedule replaces the port's link schedule (state changes at times
	// from now); `emulab up` sends a link's lab-file schedule with it. Not
	// omitempty: an empty list cancels the schedule, null leaves it.
	Schedule []ScheduleStep `json:"schedule"`
}

// StateWord is "up" or "down", the words of a link's state in link ops
// and logs.
func StateWord(up bool) string {
	if up {
		return "up"
	}
	return "down"
}

// Empty reports whether the change changes nothing.
func (c *LinkChange) Empty() bool {
	return c.State == "" && c.Rate == "" && c.Delay == "" && c.Loss == nil && c.Corrupt == nil && c.Schedule == nil
}

// OnlyState reports whether the change sets the link state and nothing
// else, the one change emunic's link op makes.
func (c *LinkChange) OnlyState() bool {
	return c.State != "" && c.Rate == "" && c.Delay == "" && c.Loss == nil && c.Corrupt == nil
}

// SetLink sends a link op to a daemon and returns its response line as
// JSON (emuswitch answers with the port's new status).
func SetLink(control string, c LinkChange, timeout time.Duration) (json.RawMessage, error) {
	req := struct {
		Op string `json:"op"`
		LinkChange
	}{"link", c}
	var raw json.RawMessage
	if err := ControlRequest(control, req, &raw, timeout); err != nil {
		if ctlpeer.Timeout(err) {
			// The request was sent: a daemon that was only slow (stopped,
			// loaded) still applies it when it reads it.
			return nil, fmt.Errorf("%w (the daemon got the request and may still apply it: `%s` shows the link as it is)", err, socketStatusCommand(control))
		}
		return nil, err
	}
	return raw, nil
}

// ParseProbability parses a loss or corruption probability as a lab file
// writes it: a number in [0, 1] ("0.01") or a percentage ("1%", "0.5%").
func ParseProbability(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	switch {
	case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("%q is not a probability (a number in [0, 1] or a percentage like 1%%)", s)
	case pct && (f < 0 || f > 100):
		return 0, fmt.Errorf("%q is not a percentage in [0%%, 100%%]", s)
	case pct:
		return f / 100, nil
	case f < 0 || f > 1:
		return 0, fmt.Errorf("%q is not a probability in [0, 1] (write %s%% for a percentage)", s, t)
	}
	return f, nil
}

// CaptureStream is a live capture from one daemon: after the daemon's OK
// line, the connection carries a pcapng stream, one interface per
// captured port in the order asked for. CloseWrite ends the capture and
// lets the stream end with the daemon's statistics; Close ends it at once
// (the daemon stops when it sees the connection close).
type CaptureStream struct {
	conn net.Conn
	r    *bufio.Reader
}

// OpenCapture asks a daemon for a capture of ports with {"op":"capture"}
// (emuswitch: any of its ports, all when ports is empty; emunic: its one
// port). padLinks asks an InfiniBand daemon to write each 6-byte link
// packet zero-padded to 64 bytes ("pad_links"), which Wireshark 4.0 needs
// to show its fields. Connecting and the answer are bounded by timeout;
// the stream that follows is not.
func OpenCapture(control string, ports []string, padLinks bool, timeout time.Duration) (*CaptureStream, error) {
	c, err := dialControl(control, timeout)
	if err != nil {
		return nil, err
	}
	req := struct {
		Op       string   `json:"op"`
		Ports    []string `json:"ports,omitempty"`
		PadLinks bool     `json:"pad_links,omitempty"`
	}{"capture", ports, padLinks}
	b, err := json.Marshal(req)
	if err != nil {
		c.Close()
		return nil, err
	}
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		err = controlErr(c, control, timeout, err)
		c.Close()
		return nil, err
	}
	// The OK line is read byte-wise up to its newline by a buffered
	// reader that then keeps serving the pcapng bytes behind it.
	br := bufio.NewReaderSize(c, 64<<10)
	line, err := br.ReadBytes('\n')
	if err != nil {
		err = controlErr(c, control, timeout, err)
		c.Close()
		return nil, err
	}
	var head struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		c.Close()
		return nil, fmt.Errorf("control %s: response: %w", control, err)
	}
	if !head.OK {
		c.Close()
		if head.Error == "" {
			head.Error = "capture refused"
		}
		return nil, fmt.Errorf("control %s: %w", control, errors.New(head.Error))
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		c.Close()
		return nil, err
	}
	return &CaptureStream{conn: c, r: br}, nil
}

// Read reads the pcapng stream.
func (s *CaptureStream) Read(p []byte) (int, error) { return s.r.Read(p) }

// Close ends the capture.
func (s *CaptureStream) Close() error { return s.conn.Close() }

// CloseWrite asks the daemon to end the capture and keeps the stream open:
// the daemon stops capturing, writes the records it still holds and a
// pcapng Interface Statistics Block per port (the records it was offered
// and those a slow reader lost), and closes. Read to the end to have them.
func (s *CaptureStream) CloseWrite() error {
	if cw, ok := s.conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return s.conn.Close()
}

var _ io.ReadCloser = (*CaptureStream)(nil)
