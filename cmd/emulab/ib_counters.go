package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/nicd"
)

// emulab ib counters: an HCA's PortCounters read over the fabric, as
// perfquery reads them: another HCA of the running lab sends a PerfMgt
// Get(PortCounters) from its QP1 to the node's LID, whose QP1 answers.

func ibCountersCmd(fl *ibFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "counters LAB --node NODE [--port PORT]",
		Short: "A port's PortCounters, as perfquery prints them (an HCA's read over the fabric with a PerfMgt GMP)",
		Long: `counters asks, from another HCA of the running InfiniBand lab LAB, the port of
HOST for its PortCounters with a performance management GMP (class 0x04, QP1,
LID-routed through the switches), and prints the answer as perfquery does.
PortXmitData and PortRcvData count 4-byte words; link packets are not counted.
The lab's file names the lab too, as for emulab down and status.

For a switch, --port names the port (p2, or its number). emuswitch has no
performance management agent: its counters are read from its control socket,
as emulab stats reads them, and printed in the same layout (a note on
standard error says so).`,
		Example: `  emulab ib counters ib-two-hosts --node h2
  emulab ib counters ib-two-hosts --node sw1 --port p2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIBCounters(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], fl)
		},
	}
	cmd.Flags().StringVar(&fl.port, "port", "", "a switch's port `PORT` (name or number)")
	return cmd
}

func runIBCounters(out, errOut io.Writer, arg string, fl *ibFlags) error {
	// A lab file names the lab it brings up, as for down and status: the
	// counters are the running lab's, read over its fabric.
	name, err := labNameArg(arg)
	if err != nil {
		return err
	}
	// --json and --cut are ib's flags for a sweep of a lab file; counters
	// reads a running lab and prints perfquery's text, so they would be
	// dropped without a word.
	if fl.json {
		return fmt.Errorf("--json: counters prints perfquery's text; emulab stats %s/NODE --json has a port's counters as JSON", name)
	}
	if fl.cut != "" {
		return fmt.Errorf("--cut %s: counters reads a running lab; cut a link with emulab link set %s/NODE:PORT down", fl.cut, name)
	}
	if fl.node == "" {
		return fmt.Errorf("give --node HOST: whose port counters")
	}
	st, err := lab.ReadStatus(fl.stateDir, name)
	if err != nil || st.Info == nil {
		if name != arg {
			return fmt.Errorf("lab %s (%s): not up (%v); counters reads a running lab's ports: bring it up first (emulab up FILE)", name, arg, err)
		}
		return fmt.Errorf("lab %s: not up (%v)", name, err)
	}
	if st.Info.Fabric != lab.FabricIB {
		return fmt.Errorf("lab %s: counters reads InfiniBand ports (PerfMgt); this lab is RoCE: try emulab stats", name)
	}
	spec, err := lab.Load(st.Info.File)
	if err != nil {
		return fmt.Errorf("lab %s: %w", name, err)
	}
	target := spec.Node(fl.node)
	switch {
	case target == nil:
		return fmt.Errorf("--node %s: lab %s has no such node", fl.node, name)
	case target.Kind == lab.KindSwitch:
		return switchPortCounters(out, errOut, st.Info, target, fl)
	case target.Kind != lab.KindNIC:
		return fmt.Errorf("--node %s: a %s node; counters reads HCA and switch ports", fl.node, target.Kind)
	case fl.port != "":
		return fmt.Errorf("--port %s: %s is an HCA with one port; --port names a switch's", fl.port, fl.node)
	}
	// Asked from another HCA, the first whose emunic answers: a dead or
	// hung one (its daemon killed or stopped) is passed over.
	var (
		from *lab.NodeInfo
		r    nicd.Response
		errs []string
	)
	for i := range st.Info.Nodes {
		n := &st.Info.Nodes[i]
		if n.Kind != lab.KindNIC || n.Control == "" || n.Name == target.Name {
			continue
		}
		err := lab.ControlRequest(n.Control, &nicd.Request{Op: "perfquery", LID: target.LID}, &r, 5*time.Second)
		if err == nil {
			from = n
			break
		}
		if !isDialError(err) && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s asking %s (lid %d): %w", n.Name, target.Name, target.LID, err)
		}
		errs = append(errs, fmt.Sprintf("%s: %v", n.Name, err))
	}
	if from == nil {
		if len(errs) == 0 {
			return fmt.Errorf("lab %s: no other HCA to ask from", name)
		}
		return fmt.Errorf("lab %s: no other HCA's emunic answers to ask %s's counters (`%s`): %s", name, target.Name, lab.StatusCommand(fl.stateDir, name), strings.Join(errs, "; "))
	}
	if r.PortCounters == nil {
		return fmt.Errorf("%s asking %s: no counters in the answer", from.Name, target.Name)
	}
	writePerfQuery(out, target.LID, r.PortCounters)
	return nil
}

// switchPortCounters prints a switch port's PortCounters. emuswitch has
// no PMA (its SMA answers SMPs only), so they come from its control
// socket, the engine's IBA counters (switchcore.PortCounters.EachIB), and
// are printed as perfquery prints an agent's answer, the switch's LID and
// the port's number in the header.
func switchPortCounters(out, errOut io.Writer, li *lab.LabInfo, sw *lab.Node, fl *ibFlags) error {
	n := li.Node(sw.Name)
	if n == nil || n.Control == "" {
		return fmt.Errorf("--node %s: the lab's record has no daemon for it", sw.Name)
	}
	if fl.port == "" {
		return fmt.Errorf("--node %s is a switch: give --port (ports: %s)", sw.Name, n.PortNames())
	}
	num, port := 0, ""
	for i, p := range n.Ports {
		if p.Name == fl.port || strconv.Itoa(i+1) == fl.port {
			num, port = i+1, p.Name
		}
	}
	if port == "" {
		return fmt.Errorf("--port %s: %s has no such port (ports: %s)", fl.port, sw.Name, n.PortNames())
	}
	c, err := lab.QueryCounters(n.Control, port, opsTimeout)
	if err != nil {
		return daemonError("ib counters", n, fl.stateDir, li.Lab, err)
	}
	if len(c.Ports) != 1 {
		return fmt.Errorf("ib counters: %s answered with %d ports", sw.Name, len(c.Ports))
	}
	m := c.Ports[0].Counters
	fmt.Fprintf(errOut, "%s has no performance management agent: port %s's counters read from emuswitch's control socket\n", sw.Name, port)
	writePerfQuery(out, sw.LID, &mad.PortCountersFields{
		PortSelect: uint8(num),
		LinkDowned: m["link_down_events_phy"],
		RcvErrors:  m["drop_malformed"],
		// IBA 16.1.3.5's, which the engine counts at the port the spec
		// names: relay errors at the input port (no LFT entry, SL2VL to
		// VL15), discards at the output port (not Active, beyond its
		// MTU). The drop reasons count where a packet was dropped, an
		// oversized one at its ingress, a link-down one at either end.
		RcvSwitchRelayErrors: m["port_rcv_switch_relay_errors"],
		XmitDiscards:         m["port_xmit_discards"],
		XmitData:             m["port_xmit_data"],
		RcvData:              m["port_rcv_data"],
		XmitPkts:             m["port_xmit_packets"],
		RcvPkts:              m["port_rcv_packets"],
		XmitWait:             m["port_xmit_wait"],
		// Packets the peer sent beyond the credit this port granted.
		ExcessiveBufferOverrun: m["excessive_buffer_overrun_errors"],
	})
	return nil
}

// writePerfQuery prints PortCounters as perfquery does: a header with the
// agent's PerfMgt CapabilityMask (emunic's agent counts PortXmitWait, in
// ticks of mad.XmitWaitTick),
// then one "Name:.....value" line per field of the attribute, in its
// order, the name and its dots filling 33 columns (libibmad's
// _mad_dump_field). The fields emunic does not count (constraint and
// integrity errors, the counter selects) are the zeros the attribute
// carries.
func writePerfQuery(w io.Writer, lid uint16, pc *mad.PortCountersFields) {
	fmt.Fprintf(w, "# Port counters: Lid %d port %d (CapMask: 0x%04X)\n", lid, pc.PortSelect, mad.PerfMgtCapXmitWait)
	for _, kv := range []struct {
		k string
		v uint64
	}{
		{"PortSelect", uint64(pc.PortSelect)}, {"CounterSelect", 0}, {"SymbolErrorCounter", pc.SymbolErrors},
		{"LinkErrorRecoveryCounter", pc.LinkErrorRecovery}, {"LinkDownedCounter", pc.LinkDowned},
		{"PortRcvErrors", pc.RcvErrors}, {"PortRcvRemotePhysicalErrors", pc.RcvRemotePhysicalErrors},
		{"PortRcvSwitchRelayErrors", pc.RcvSwitchRelayErrors}, {"PortXmitDiscards", pc.XmitDiscards},
		{"PortXmitConstraintErrors", 0}, {"PortRcvConstraintErrors", 0}, {"CounterSelect2", 0},
		{"LocalLinkIntegrityErrors", 0}, {"ExcessiveBufferOverrunErrors", pc.ExcessiveBufferOverrun},
		{"VL15Dropped", pc.VL15Dropped}, {"PortXmitData", pc.XmitData}, {"PortRcvData", pc.RcvData},
		{"PortXmitPkts", pc.XmitPkts}, {"PortRcvPkts", pc.RcvPkts}, {"PortXmitWait", pc.XmitWait},
	} {
		fmt.Fprintf(w, "%s:%s%d\n", kv.k, strings.Repeat(".", max(1, 32-len(kv.k))), kv.v)
	}
}

// isDialError reports an error from reaching a daemon's control socket
// (the daemon is gone), not from what it answered.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
