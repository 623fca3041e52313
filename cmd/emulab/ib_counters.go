package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
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
	return &cobra.Command{
		Use:   "counters LAB --node HOST",
		Short: "An HCA's port counters, read over the fabric with a PerfMgt GMP (as perfquery)",
		Long: `counters asks, from another HCA of the running InfiniBand lab LAB, the port of
HOST for its PortCounters with a performance management GMP (class 0x04, QP1,
LID-routed through the switches), and prints the answer as perfquery does.
PortXmitData and PortRcvData count 4-byte words; link packets are not counted.`,
		Example: `  emulab ib counters ib-two-hosts --node h2`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIBCounters(cmd.OutOrStdout(), args[0], fl)
		},
	}
}

func runIBCounters(out io.Writer, name string, fl *ibFlags) error {
	if fl.node == "" {
		return fmt.Errorf("give --node HOST: whose port counters")
	}
	st, err := lab.ReadStatus(fl.stateDir, name)
	if err != nil || st.Info == nil {
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
	case target.Kind != lab.KindNIC:
		return fmt.Errorf("--node %s: a switch; counters reads HCA ports (emulab stats %s/%s shows a switch's)", fl.node, name, fl.node)
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
		{"LocalLinkIntegrityErrors", 0}, {"ExcessiveBufferOverrunErrors", 0},
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
