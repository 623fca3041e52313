package lab

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/emufabric/emufabric/internal/ctlpeer"
)

// ControlRequest sends one request to a daemon's control socket (newline-
// delimited JSON, the protocol emuswitch and emunic share) and decodes the
// one-line response into resp. A response with "ok": false is an error
// carrying the daemon's "error" text. The whole exchange is bounded by
// timeout; a daemon that did not answer in it is named in the error with
// its state (ctlpeer.NoAnswerError: "emunic (pid N) did not answer in 1s:
// it is stopped (SIGSTOP)"), since a stopped daemon's socket still takes
// the connection and the request.
func ControlRequest(path string, req, resp any, timeout time.Duration) error {
	c, err := dialControl(path, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		return controlErr(c, path, timeout, err)
	}
	line, err := bufio.NewReaderSize(c, 64<<10).ReadBytes('\n')
	if err != nil {
		return controlErr(c, path, timeout, err)
	}
	var head struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return fmt.Errorf("control %s: response: %w", path, err)
	}
	if !head.OK {
		if head.Error == "" {
			head.Error = "request refused"
		}
		return fmt.Errorf("control %s: %w", path, errors.New(head.Error))
	}
	if resp == nil {
		return nil
	}
	return json.Unmarshal(line, resp)
}

// DaemonPort is a daemon's port as its control socket reports it.
type DaemonPort struct {
	Port      string
	Transport string
	// Wire is the link's rate and what the port emulates of its wire, as
	// `link set` takes them: "rate 1G, delay 1us", with loss and corrupt
	// when not 0 ("rate 100G" alone for an emunic across from a switch,
	// whose wire the switch port emulates).
	Wire string
	// Link is "up", "down", "down (admin)" (set down by a link op, as
	// `emulab link set` does), "down (peer)" (the far end was), "down
	// (peer silent)" (a UDP link's peer sent nothing for a while), or
	// "waiting" (a listening port without a peer yet).
	Link string
	// NoFlood: a switch port outside the spanning tree of the links up
	// now, which floods no broadcast (it changes as links go down).
	NoFlood bool
}

// SwitchPortLink is the word for a switch port's link, from the fields of
// emuswitch's port status, as DaemonPort.Link says it (status, link set):
// "down (admin)" set down here, "down (peer silent)", "down (peer)" set
// down at the far end, "up", "waiting" for a peer to connect, or "down".
func SwitchPortLink(adminUp, connected, up, peerDown, peerSilent bool) string {
	switch {
	case !adminUp:
		return "down (admin)"
	case peerSilent:
		return "down (peer silent)"
	case peerDown:
		return "down (peer)"
	case up:
		return "up"
	case !connected:
		return "waiting"
	}
	return "down"
}

// DaemonView is what a daemon's status says of its ports, and, for a
// RoCE switch, of its link-state routing.
type DaemonView struct {
	Ports []DaemonPort
	// RoutedAround: the lab links the switch's routes avoid; Mismatched:
	// the switches whose advertisements describe another fabric.
	RoutedAround, Mismatched []string
}

// DaemonPorts asks a daemon for its ports' state with {"op":"status"}.
// emuswitch answers with a "ports" list, emunic with its one port in
// "status".
func DaemonPorts(control string, timeout time.Duration) ([]DaemonPort, error) {
	v, err := QueryDaemonView(control, timeout)
	if err != nil {
		return nil, err
	}
	return v.Ports, nil
}

// QueryDaemonView asks a daemon for its status once: its ports and, on a
// RoCE switch, its link-state routing.
func QueryDaemonView(control string, timeout time.Duration) (*DaemonView, error) {
	var r struct {
		linkStateReply
		Ports []struct {
			Port       string  `json:"port"`
			Transport  string  `json:"transport"`
			URI        string  `json:"uri"`
			Connected  bool    `json:"connected"`
			Up         bool    `json:"up"`
			AdminUp    *bool   `json:"admin_up"`
			PeerDown   bool    `json:"peer_down"`
			PeerSilent bool    `json:"peer_silent"`
			Rate       string  `json:"rate"`
			Delay      string  `json:"delay"`
			Loss       float64 `json:"loss"`
			Corrupt    float64 `json:"corrupt"`
			NoFlood    bool    `json:"no_flood"`
		} `json:"ports"`
		Status *struct {
			Port      string `json:"port"`
			Transport string `json:"transport"`
			Link      string `json:"link"`
			AdminDown bool   `json:"admin_down"`
			RateBps   uint64 `json:"rate_bps"`
			Wire      *struct {
				Delay   string  `json:"delay"`
				Loss    float64 `json:"loss"`
				Corrupt float64 `json:"corrupt"`
			} `json:"wire"`
		} `json:"status"`
	}
	if err := ControlRequest(control, map[string]string{"op": "status"}, &r, timeout); err != nil {
		return nil, err
	}
	v := &DaemonView{}
	if ls := r.LinkState; ls != nil {
		v.RoutedAround, v.Mismatched = ls.RoutedAround, ls.Mismatched
	}
	var out []DaemonPort
	for _, p := range r.Ports {
		st := SwitchPortLink(p.AdminUp == nil || *p.AdminUp, p.Connected, p.Up, p.PeerDown, p.PeerSilent)
		tr := p.Transport
		if p.URI != "" {
			tr = p.URI
		}
		out = append(out, DaemonPort{Port: p.Port, Transport: tr, Link: st, Wire: wireWords(p.Rate, p.Delay, p.Loss, p.Corrupt), NoFlood: p.NoFlood})
	}
	if r.Status != nil && r.Status.Port != "" {
		st := r.Status.Link
		if r.Status.AdminDown {
			st = "down (admin)"
		}
		wire := "rate " + FormatRate(r.Status.RateBps)
		if w := r.Status.Wire; w != nil {
			wire = wireWords(FormatRate(r.Status.RateBps), w.Delay, w.Loss, w.Corrupt)
		}
		out = append(out, DaemonPort{Port: r.Status.Port, Transport: r.Status.Transport, Link: st, Wire: wire})
	}
	v.Ports = out
	return v, nil
}

// wireWords describes a wire as `link set` takes it.
func wireWords(rate, delay string, loss, corrupt float64) string {
	w := "rate " + rate + ", delay " + delay
	if loss > 0 {
		w += fmt.Sprintf(", loss %g", loss)
	}
	if corrupt > 0 {
		w += fmt.Sprintf(", corrupt %g", corrupt)
	}
	return w
}

// ErrNoDaemon is a control socket nobody listens on: its daemon is not
// running. The error carrying it already says so and names the status
// command to run.
var ErrNoDaemon = errors.New("no daemon listens there: it is not running")

// dialControl connects to a daemon's control socket. A socket nobody
// listens on is a daemon that is not running (killed, or crashed), and
// the error says so rather than "connection refused", with the status
// command of the socket's lab under its state root.
func dialControl(path string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("unix", path, timeout)
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %w (`%s` shows which is dead)", err, ErrNoDaemon, socketStatusCommand(path))
	}
	return c, err
}

// controlErr is the error of a request on c to the control socket path
// that failed after waiting up to timeout: a deadline that ran out names
// the daemon and what it is doing, any other error says the socket.
func controlErr(c net.Conn, path string, timeout time.Duration, err error) error {
	if ctlpeer.Timeout(err) {
		return ctlpeer.NoAnswer(c, path, timeout, err)
	}
	return fmt.Errorf("control %s: %w", path, err)
}

// linkStateReply is the link_state part of an emuswitch's status reply
// (swd.LinkStateStatus; absent on a switch that does not route).
type linkStateReply struct {
	LinkState *struct {
		Down         map[string][]string `json:"down"`
		RoutedAround []string            `json:"routed_around"`
		Mismatched   []string            `json:"mismatched"`
	} `json:"link_state"`
}
