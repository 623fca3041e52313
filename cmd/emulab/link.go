//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/swd"
)

type linkFlags struct {
	stateDir string
	lab      string
}

func init() {
	var fl linkFlags
	link := &cobra.Command{
		Use:   "link",
		Short: "Change a running lab's links (state, rate, delay, loss, corruption)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return fmt.Errorf("link: say what to do: emulab link set NODE:PORT down|up|rate R|delay D|loss L|corrupt C")
		},
	}
	set := &cobra.Command{
		Use:   "set NODE:PORT CHANGE...",
		Short: "Set a port's link down or up, or its rate, delay, loss or corruption",
		Long: `link set changes one port's link while the lab runs, through the port's daemon
(the switch's link op, or the NIC's). A change is one of

  down | up        take the link down (no frame passes either way) or back up
  rate R           the link's rate: 100G, 25Gbps, 800Mbit/s, ..., from 1M
                   to 1.6T (a bare number is bits per second)
  delay D          one-way propagation delay: 5ms, 1us, 250ns, 0
  loss L           drop probability per frame: 0.01 or 1%
  corrupt C        corruption probability per frame: 0.001 or 0.1%

and several may be given at once; they are checked before anything is
changed (where both ends of a link take a change, the far end checks it
again when it is set there, and an error then says the near end has it
already). A rate is the link's, both ways: set on either end of a link
between a switch and an emulated NIC (emunic), it is set on both, the switch
port's transmitter and the NIC's; between two switches, on both ports. A
switch port runs at the rate it is given, so its queues, PFC and ECN see the
link as it now is. Delay, loss and corruption hold both ways too: a switch
port toward an emulated NIC or a TAP host emulates the wire both ways;
between two switches each emulates what it sends, and between two emulated
NICs each what it receives, so the change is made on both ends. An emunic
across from a switch takes down, up and rate only: set the others on the
switch side of its link. A host without a daemon (a lab brought up with
--hosts tap) is a TAP port of its switch: the change is made on that switch
port. A rate takes effect at once (the frame on the wire sends the rest of its
bits at it, and the frames queued behind it go at it); a delay applies to the
frames sent after it. A link never reorders: after a shorter delay the frames
sent next arrive no earlier than the last one still in flight.

NODE is LAB/NODE, or NODE when one lab is up (or with --lab); PORT may be left
out for a node with one port.`,
		Example: `  sudo bin/emulab link set sw1:p1 down
  sudo bin/emulab link set sw1:p1 up
  sudo bin/emulab link set sw1:p2 delay 5ms loss 0.1%
  sudo bin/emulab link set two-hosts/sw1:p1 rate 10G
  sudo bin/emulab link set h1 down`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLinkSet(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], args[1:], &fl)
		},
	}
	link.PersistentFlags().StringVar(&fl.stateDir, "state-dir", lab.DefaultStateRoot, "state directories of labs live under `DIR`")
	link.PersistentFlags().StringVar(&fl.lab, "lab", "", "the node is in lab `NAME` (default: the one lab that is up)")
	// A negative value (rate -1G) reads as a flag to the parser; say what
	// it is instead of "unknown shorthand flag: '1' in -1G".
	set.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// pflag: "unknown shorthand flag: '1' in -1G"
		_, a, ok := strings.Cut(err.Error(), "' in ")
		if ok && len(a) > 1 && a[0] == '-' && (a[1] >= '0' && a[1] <= '9' || a[1] == '.') {
			return fmt.Errorf("%s: a negative value; rates, delays and probabilities are 0 or more", a)
		}
		return err
	})
	link.AddCommand(set)
	rootCmd.AddCommand(link)
}

// parseLinkChange reads the CHANGE words of link set, validating every
// value with the lab file's parsers. Errors name the argument.
func parseLinkChange(words []string) (lab.LinkChange, error) {
	var c lab.LinkChange
	if len(words) == 0 {
		return c, errors.New("no change given: down, up, rate R, delay D, loss L or corrupt C")
	}
	seen := map[string]bool{}
	for i := 0; i < len(words); i++ {
		w := words[i]
		key := w
		if w == "up" || w == "down" {
			key = "state"
		}
		if seen[key] {
			return c, fmt.Errorf("%s given twice", key)
		}
		seen[key] = true
		switch w {
		case "up", "down":
			c.State = w
			continue
		case "rate", "delay", "loss", "corrupt":
		default:
			return c, fmt.Errorf("%q: not a change (down, up, rate R, delay D, loss L, corrupt C)", w)
		}
		if i+1 >= len(words) {
			return c, fmt.Errorf("%s: no value given", w)
		}
		i++
		v := words[i]
		switch w {
		case "rate":
			r, err := lab.ParseRate(v)
			if err != nil {
				return c, err // `rate "10X": ...`
			}
			if err := lab.CheckLinkRate(r); err != nil {
				return c, fmt.Errorf("rate %q: %w", v, err)
			}
			c.Rate = v
		case "delay":
			d, err := lab.ParseTime(v)
			if err != nil {
				return c, fmt.Errorf("delay: %w", err)
			}
			if d < 0 {
				return c, fmt.Errorf("delay %q: must not be negative", v)
			}
			c.Delay = v
		case "loss", "corrupt":
			p, err := lab.ParseProbability(v)
			if err != nil {
				return c, fmt.Errorf("%s: %w", w, err)
			}
			if w == "loss" {
				c.Loss = &p
			} else {
				c.Corrupt = &p
			}
		}
	}
	return c, nil
}

// changedWords names what a change sets, for messages.
func changedWords(c *lab.LinkChange) string {
	var w []string
	if c.Rate != "" {
		w = append(w, "rate")
	}
	if c.Delay != "" {
		w = append(w, "delay")
	}
	if c.Loss != nil {
		w = append(w, "loss")
	}
	if c.Corrupt != nil {
		w = append(w, "corrupt")
	}
	return strings.Join(w, ", ")
}

func runLinkSet(out, errOut io.Writer, endpoint string, words []string, fl *linkFlags) error {
	change, err := parseLinkChange(words)
	if err != nil {
		return fmt.Errorf("link set %s: %w", endpoint, err)
	}
	nodeName, port := lab.SplitEndpoint(endpoint)
	li, n, err := findNode(fl.stateDir, fl.lab, nodeName)
	if err != nil {
		return fmt.Errorf("link set %s: %w", endpoint, err)
	}
	if port == "" {
		if n.Kind == lab.KindSwitch || len(n.Ports) != 1 {
			return fmt.Errorf("link set %s: say which port, %s:PORT (ports: %s)", endpoint, n.Name, n.PortNames())
		}
		port = n.Ports[0].Name
	}
	target, tport := n, port
	if n.Kind != lab.KindSwitch {
		p := n.Port(port)
		if p == nil {
			return fmt.Errorf("link set %s: %s has no port %s (ports: %s)", endpoint, n.Name, port, n.PortNames())
		}
		switch {
		case n.Control == "":
			// A plain host's interface is a TAP port of its switch:
			// the link is that port's.
			peerNode, peerPort := lab.SplitEndpoint(p.Peer)
			if target = li.Node(peerNode); target == nil || target.Control == "" || peerPort == "" {
				return fmt.Errorf("link set %s: %s has no daemon and its link's peer %q has none either", endpoint, n.Name, p.Peer)
			}
			tport = peerPort
			fmt.Fprintf(errOut, "%s:%s is a TAP port of %s: setting %s\n", n.Name, port, target.Name, p.Peer)
		case (change.Delay != "" || change.Loss != nil || change.Corrupt != nil) && !nicPeer(li, p.Peer):
			hint := ""
			if p.Peer != "" {
				hint = "; set it on the switch side of the link: " + lab.LinkSetCommand(fl.stateDir, li.Lab+"/"+p.Peer, strings.Join(withoutState(words), " "))
			}
			return fmt.Errorf("link set %s: %s (emunic) changes only its link state (down, up) and rate, not %s%s",
				endpoint, n.Name, changedWords(&change), hint)
		}
	}
	change.Port = tport
	raw, err := lab.SetLink(target.Control, change, opsTimeout)
	if err != nil {
		return fmt.Errorf("link set %s: %w", endpoint, err)
	}
	if err := writeLinkResult(out, fl.stateDir, target.Name+":"+tport, farEnd(li, target, tport), lab.StatusCommand(fl.stateDir, li.Lab), &change, raw); err != nil {
		return err
	}
	// A rate is the link's, both ways: each end's transmitter runs at it,
	// so the other end takes it too when it has a daemon of its own (a
	// TAP host's port is its switch's, which paces both ways). The wire's
	// delay, loss and corruption are emulated by a switch port both ways
	// toward a NIC, but by each end for itself between two switches (its
	// egress) and between two NICs (its ingress): there both ends take
	// them.
	peer, pport := linkPeer(li, target, tport)
	if peer == nil {
		return nil
	}
	pc := lab.LinkChange{Port: pport, Rate: change.Rate}
	if target.Kind == peer.Kind {
		pc.Delay, pc.Loss, pc.Corrupt = change.Delay, change.Loss, change.Corrupt
	}
	if pc.Rate == "" && pc.Delay == "" && pc.Loss == nil && pc.Corrupt == nil {
		return nil
	}
	if raw, err = lab.SetLink(peer.Control, pc, opsTimeout); err != nil {
		return fmt.Errorf("link set %s: %s was set on %s:%s, but not on the link's other end %s:%s: %w", endpoint, changedWords(&pc), target.Name, tport, peer.Name, pport, err)
	}
	return writeLinkResult(out, fl.stateDir, peer.Name+":"+pport, farEnd(li, peer, pport), lab.StatusCommand(fl.stateDir, li.Lab), &pc, raw)
}

// farEnd is the endpoint at the other end of node's port as LAB/NODE:PORT,
// which any command takes ("" for none).
func farEnd(li *lab.LabInfo, node *lab.NodeInfo, port string) string {
	if p := node.Port(port); p != nil && p.Peer != "" {
		return li.Lab + "/" + p.Peer
	}
	return ""
}

// linkPeer returns the other end of node's port when it has a daemon: a
// switch's port or an emulated NIC. nil toward a TAP host (the switch port
// is the whole link) or nothing.
func linkPeer(li *lab.LabInfo, node *lab.NodeInfo, port string) (*lab.NodeInfo, string) {
	p := node.Port(port)
	if p == nil || p.Peer == "" {
		return nil, ""
	}
	peerName, peerPort := lab.SplitEndpoint(p.Peer)
	peer := li.Node(peerName)
	if peer == nil || peer.Control == "" || peerPort == "" {
		return nil, ""
	}
	return peer, peerPort
}

// nicPeer reports whether the endpoint peer (NODE:PORT) is an emulated
// NIC's.
func nicPeer(li *lab.LabInfo, peer string) bool {
	name, _ := lab.SplitEndpoint(peer)
	n := li.Node(name)
	return n != nil && n.Kind == lab.KindNIC && n.Control != ""
}

// withoutState drops up and down from CHANGE words (for the hint that
// sends the rest to the switch).
func withoutState(words []string) []string {
	var out []string
	for _, w := range words {
		if w != "up" && w != "down" {
			out = append(out, w)
		}
	}
	return out
}

// writeLinkResult prints the port's state after the change: emuswitch
// answers with the port's status, emunic with a bare OK. The state is
// said as status says it (lab.SwitchPortLink); a link down because of its
// far end (peer, the endpoint there) gets a hint naming it.
func writeLinkResult(out io.Writer, root, name, peer, status string, c *lab.LinkChange, raw json.RawMessage) error {
	var r struct {
		Port *swd.PortStatus `json:"port"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.Port == nil {
		// emunic: what was set.
		var w []string
		if c.State != "" {
			w = append(w, c.State)
		}
		if c.Rate != "" {
			w = append(w, "rate "+c.Rate)
		}
		if c.Delay != "" {
			w = append(w, "delay "+c.Delay)
		}
		if c.Loss != nil {
			w = append(w, fmt.Sprintf("loss %g", *c.Loss))
		}
		if c.Corrupt != nil {
			w = append(w, fmt.Sprintf("corrupt %g", *c.Corrupt))
		}
		_, err := fmt.Fprintf(out, "%s: link %s\n", name, strings.Join(w, ", "))
		return err
	}
	p := r.Port
	state := lab.SwitchPortLink(p.AdminUp, p.Connected, p.Up, p.PeerDown, p.PeerSilent)
	far := peer
	if far == "" {
		far = "the far end"
	}
	hint := ""
	switch state {
	case "down (peer)":
		hint = fmt.Sprintf("; the far end, %s, is set down: %s", far, lab.LinkSetCommand(root, far, "up"))
		if peer == "" {
			hint = "; the far end is set down"
		}
	case "down (peer silent)":
		hint = fmt.Sprintf("; the far end, %s, sends nothing (is its daemon running? %s)", far, status)
	case "waiting":
		hint = fmt.Sprintf("; nothing is connected from the far end, %s, yet", far)
	}
	_, err := fmt.Fprintf(out, "%s: link %s, rate %s (port speed %s), delay %s, loss %g, corrupt %g%s\n",
		name, state, p.Rate, p.Speed, p.Delay, p.Loss, p.Corrupt, hint)
	return err
}
