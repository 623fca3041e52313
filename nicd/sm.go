package nicd

import (
	"errors"
	"fmt"
	"io"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/sm"
)

// The subnet manager of an IB lab (ib.sm) runs in the emunic of the host
// the lab names, as OpenSM runs on a host and binds to its HCA's port:
// its SMPs leave through the NIC's QP0, responses come back through the
// NIC's SMA. It sweeps when the link first comes up, then light-sweeps to
// notice links that change.

// Real-time SM timing. The simulator's defaults (100 us SMP timeout, the
// lab's light sweep in microseconds) assume a fabric whose round trips
// are microseconds; across processes a round trip is a few hundred, and a
// light sweep every 50 us would keep every daemon busy. OpenSM's own
// defaults are a 200 ms transaction timeout and a 10 s sweep interval.
const (
	smTimeoutRT    = 200 * clock.Millisecond
	smMinLightRT   = 200 * clock.Millisecond
	smMaxOutstanRT = 4
)

// newSM builds the SM runner when this node hosts the lab's SM.
func (d *Daemon) newSM() {
	ib := d.opts.Spec.IB
	if ib == nil || ib.SM == nil || d.cfg.NIC.SMA == nil || !d.cfg.NIC.SMA.IsSM {
		return
	}
	light := max(ib.SM.SweepInterval, smMinLightRT)
	m := sm.New(sm.Config{MaxOutstanding: smMaxOutstanRT, Timeout: smTimeoutRT, LightSweep: light})
	d.smr = sm.NewRunner(m, d.clk, d.nic)
	d.nic.SetSMPDeliver(d.smr.Receive)
	// Logged when it ends, also on a timeout (a sweep across a cut link).
	d.smr.OnStep(d.logSweep)
	d.log.Printf("subnet manager: sweeps when the link comes up, light sweep every %v", light)
}

// startSM starts the first heavy sweep once the link is up. Loop
// goroutine.
func (d *Daemon) startSM() {
	if d.smr == nil || d.smStarted {
		return
	}
	d.smStarted = true
	d.smr.Start()
}

// logSweep logs each completed heavy sweep once.
func (d *Daemon) logSweep() {
	st := d.smr.SM().Stats()
	if st.HeavySweeps == d.smLogged {
		return
	}
	d.smLogged = st.HeavySweeps
	nodes := 0
	if t := d.smr.SM().Topology(); t != nil {
		nodes = len(t.Nodes)
	}
	d.log.Printf("subnet manager: heavy sweep %d done: %d nodes, %d SMPs in %v", st.HeavySweeps, nodes, st.LastSweepSMPs, st.LastSweepTime)
}

// smStatus is the SM's part of the status op. Loop goroutine.
func (d *Daemon) smStatus() *SMStatus {
	if d.smr == nil {
		return nil
	}
	m := d.smr.SM()
	st := m.Stats()
	s := &SMStatus{HeavySweeps: st.HeavySweeps, LightSweeps: st.LightSweeps, SMPsSent: st.SMPsSent,
		Timeouts: st.Timeouts, LastSweepSMPs: st.LastSweepSMPs, LastSweepUs: float64(st.LastSweepTime) / float64(clock.Microsecond),
		Errors: m.Errors()}
	if t := m.Topology(); t != nil {
		s.Nodes = len(t.Nodes)
		for _, n := range t.Nodes {
			s.LIDs = append(s.LIDs, SMNodeLID{Node: n.Desc, LID: n.LID})
		}
	}
	return s
}

// smText writes the SM's last sweep as infiniband-diags prints it (see
// sm.Topology.Write), for `emulab ib` on a running lab. Loop goroutine.
func (d *Daemon) smText(w io.Writer, what, node string) error {
	if d.smr == nil {
		return fmt.Errorf("no subnet manager runs on %s", d.cfg.NIC.Name)
	}
	t := d.smr.SM().Topology()
	if t == nil {
		return errors.New("the subnet manager has not finished a sweep yet")
	}
	var sel *sm.Node
	if node != "" {
		if sel = t.Node(lab.IBGUID(node)); sel == nil {
			return fmt.Errorf("node %s: not in the swept fabric (no such node, or cut off from the subnet manager)", node)
		}
		switch {
		case what == "ports" && sel.IsSwitch():
			return fmt.Errorf("node %s is a switch: ports shows HCAs (ibstat)", node)
		case what == "routes" && !sel.IsSwitch():
			return fmt.Errorf("node %s is an HCA: routes shows switches' forwarding tables", node)
		}
	}
	return t.Write(w, what, sel)
}
