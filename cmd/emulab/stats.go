//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/switchcore"
)

// opsTimeout bounds each request of stats, link and capture (the capture
// stream itself is unbounded) to a daemon's control socket.
const opsTimeout = 3 * time.Second

type statsFlags struct {
	stateDir string
	lab      string
	hw       bool
	json     bool
}

func init() {
	var fl statsFlags
	cmd := &cobra.Command{
		Use:   "stats NODE[:PORT]",
		Short: "Show a node's counters (ethtool -S, RDMA hw_counters, switch ports)",
		Long: `stats asks a node's daemon for its counters.

For a NIC (emunic) it prints what ethtool -S prints for a ConnectX port:
"NIC statistics:" and one "     name: value" line per counter, with the mlx5
names (rx_packets_phy, tx_bytes_phy, rx_prio3_pause, ...). --hw prints the
RDMA counters (the files under /sys/class/infiniband/<dev>/ports/1/hw_counters)
instead, as "rdma statistic show link emu_<port>/1" prints them: one line,
"link emu_eth0/1" then "name value" pairs, mlx5's counters in the driver's
groups (rx_write_requests ... out_of_sequence, the retransmission ones, the
congestion ones np_cnp_sent and rp_cnp_handled, the extended errors,
roce_adp_retrans, rdma_tx_packets ...), then the emulator's own. A RoCE NIC
lists no InfiniBand link, IPoIB or subnet-management counter, an IB NIC no
MAC Control one; --json has every counter of both in hw_counters.

For a switch (emuswitch) it prints one row per port (packets, bytes, PAUSE
frames, ECN marks, drops) and one row per port and priority that counted
anything (per-priority packets, PFC pause frames and time, ECN marks, drops).
SWITCH:PORT prints that port's counters in the ethtool -S layout, every
counter the switch keeps for its fabric (on RoCE the mlx5 names, drop
reasons, buffer watermarks and PFC watchdog; on InfiniBand the port's and
its data VLs' counters, vlN_..., with no PFC or ECN one), and the emulated
wire's and transport's counters.

A daemon whose loop ran its timers 1 ms or more late (loop_late: the machine
is short of CPU, or the daemon was stopped) says so under a switch's port
table, and on stderr after an emunic's counters.

NODE is LAB/NODE, or NODE when one lab is up (or with --lab). --json prints
the daemon's counters as one JSON object for scripts.`,
		Example: `  sudo bin/emulab stats h1
  sudo bin/emulab stats h1 --hw
  sudo bin/emulab stats sw1
  sudo bin/emulab stats two-hosts/sw1:p1
  sudo bin/emulab stats sw1 --json | jq '.ports[0].counters.rx_prio3_pause'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStats(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], &fl)
		},
	}
	cmd.Flags().StringVar(&fl.stateDir, "state-dir", lab.DefaultStateRoot, "state directories of labs live under `DIR`")
	cmd.Flags().StringVar(&fl.lab, "lab", "", "the node is in lab `NAME` (default: the one lab that is up)")
	cmd.Flags().BoolVar(&fl.hw, "hw", false, "a NIC's RDMA hw_counters, as rdma statistic show prints them, instead of ethtool -S")
	cmd.Flags().BoolVar(&fl.json, "json", false, "print the counters as JSON")
	rootCmd.AddCommand(cmd)
}

// nodeRef is the ResolveNode reference of node with --lab applied.
func nodeRef(labFlag, node string) (string, error) {
	if labFlag == "" {
		return node, nil
	}
	if strings.Contains(node, "/") {
		return "", fmt.Errorf("%s names its lab and --lab %s is given: use one", node, labFlag)
	}
	return labFlag + "/" + node, nil
}

// findNode resolves NODE or LAB/NODE (with --lab) to up's record.
func findNode(stateDir, labFlag, node string) (*lab.LabInfo, *lab.NodeInfo, error) {
	ref, err := nodeRef(labFlag, node)
	if err != nil {
		return nil, nil, err
	}
	return lab.FindNode(stateDir, ref)
}

// noDaemon explains that a node has no daemon to ask (a plain host of a
// lab brought up with --hosts tap) and points at its link's switch port
// (cmd: the command to run there) and at the kernel's own counters.
func noDaemon(n *lab.NodeInfo, cmd string) error {
	msg := fmt.Sprintf("%s has no daemon (a %s node without emulated NIC", n.Name, n.Kind)
	if n.Iface != nil && n.Iface.Owner != "" {
		msg += fmt.Sprintf("; its %s is a TAP held by %s", n.Iface.Name, n.Iface.Owner)
	}
	msg += ")"
	if len(n.Ports) > 0 && n.Ports[0].Peer != "" {
		msg += fmt.Sprintf(": try `%s %s`, the switch side of its link", cmd, n.Ports[0].Peer)
	}
	msg += fmt.Sprintf(", or `emulab exec %s -- ip -s link` for the kernel's counters", n.Name)
	return errors.New(msg)
}

// runStats prints NODE[:PORT]'s counters on out; errOut has what it says
// beside an emunic's counters, whose layouts are ethtool's and rdma's.
func runStats(out, errOut io.Writer, arg string, fl *statsFlags) error {
	node, port := lab.SplitEndpoint(arg)
	li, n, err := findNode(fl.stateDir, fl.lab, node)
	if err != nil {
		return err
	}
	if n.Control == "" {
		return noDaemon(n, "emulab stats")
	}
	if n.Kind == lab.KindSwitch && fl.hw {
		return fmt.Errorf("--hw: %s is a switch; RDMA hw_counters are a NIC's", n.Name)
	}
	// A port the lab does not have is said before any daemon is asked
	// (a switch's ports are its connected ones, as a NIC's).
	if port != "" && n.Port(port) == nil {
		return fmt.Errorf("%s: %s has no port %s (ports: %s)", arg, n.Name, port, n.PortNames())
	}
	if n.Kind != lab.KindSwitch {
		port = "" // an emunic has one port and answers for it
	}
	c, err := lab.QueryCounters(n.Control, port, opsTimeout)
	if err != nil {
		return daemonError("stats "+arg, n, fl.stateDir, li.Lab, err)
	}
	if fl.json {
		return writeStatsJSON(out, li, n, c)
	}
	switch {
	case n.Kind != lab.KindSwitch && fl.hw:
		if c.RDMA == "" {
			return fmt.Errorf("stats %s: the daemon sent no hw_counters", arg)
		}
		_, err = io.WriteString(out, c.RDMA)
		writeLoopLag(errOut, n, nicLoopCounters(c))
	case n.Kind != lab.KindSwitch:
		if c.Ethtool == "" {
			return fmt.Errorf("stats %s: the daemon sent no ethtool -S text", arg)
		}
		_, err = io.WriteString(out, c.Ethtool)
		writeLoopLag(errOut, n, nicLoopCounters(c))
	case port != "":
		if len(c.Ports) != 1 {
			return fmt.Errorf("stats %s: the daemon answered with %d ports", arg, len(c.Ports))
		}
		err = writeEthtool(out, c.Ports[0].Counters, li.Fabric == lab.FabricIB)
	default:
		if li.Fabric == lab.FabricIB {
			err = writeIBSwitchTable(out, n, c.Ports)
		} else {
			err = writeSwitchTable(out, n, c.Ports)
		}
	}
	return err
}

// daemonError is what went wrong asking n's daemon (for what): a daemon
// that cannot be reached (its socket is gone or refuses connections: it
// is not running) is said so, with where to look (the status command with
// the user's --state-dir root), once: the dial error of a daemon that is
// not running says it already (lab.ErrNoDaemon); a daemon that answered
// with an error, or not in time, is quoted as it is.
func daemonError(what string, n *lab.NodeInfo, root, labName string, err error) error {
	var oe *net.OpError
	switch {
	case errors.Is(err, lab.ErrNoDaemon):
		return fmt.Errorf("%s: %s's daemon does not answer on its control socket: %w", what, n.Name, err)
	case errors.As(err, &oe) && oe.Op == "dial":
		return fmt.Errorf("%s: %s's daemon does not answer on its control socket (is it running? `%s` says): %w", what, n.Name, lab.StatusCommand(root, labName), err)
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF):
		// A daemon killed a moment ago can still take the connection
		// (its listener closes as its last thread exits) and then
		// reset it unanswered: the same dead daemon, not another fault.
		return fmt.Errorf("%s: %s's daemon does not answer on its control socket (it closed the connection unanswered: killed, or exiting? `%s` says): %w", what, n.Name, lab.StatusCommand(root, labName), err)
	}
	return fmt.Errorf("%s: %s's daemon: %w", what, n.Name, err)
}

// writeStatsJSON prints the daemon's counters with the node they are of.
func writeStatsJSON(out io.Writer, li *lab.LabInfo, n *lab.NodeInfo, c *lab.DaemonCounters) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Lab  string       `json:"lab"`
		Node string       `json:"node"`
		Kind lab.NodeKind `json:"kind"`
		*lab.DaemonCounters
	}{li.Lab, n.Name, n.Kind, c})
}

// switchCounterOrder and ibSwitchCounterOrder are the orders emuswitch's
// engine reports its counters in (switchcore.PortCounters.Each, EachIB):
// ethtool -S lists a port's counters in the driver's order, not
// alphabetically.
var switchCounterOrder, ibSwitchCounterOrder = func() (eth, ib map[string]int) {
	eth, ib = map[string]int{}, map[string]int{}
	var pc switchcore.PortCounters
	pc.Each(func(name string, _ uint64) { eth[name] = len(eth) })
	pc.EachIB(switchcore.NumPriorities, func(name string, _ uint64) { ib[name] = len(ib) })
	return eth, ib
}()

// writeEthtool prints one switch port's counters in the ethtool -S
// layout: the engine's in its order (that of the fabric's port: ib), then
// the daemon's (wire, transport) by name.
func writeEthtool(out io.Writer, m map[string]uint64, ib bool) error {
	order := switchCounterOrder
	if ib {
		order = ibSwitchCounterOrder
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int {
		ia, oka := order[a]
		ib, okb := order[b]
		switch {
		case oka && okb:
			return ia - ib
		case oka:
			return -1
		case okb:
			return 1
		}
		return strings.Compare(a, b)
	})
	var sb strings.Builder
	sb.WriteString("NIC statistics:\n")
	for _, k := range names {
		fmt.Fprintf(&sb, "     %s: %d\n", k, m[k])
	}
	_, err := io.WriteString(out, sb.String())
	return err
}

// sumPrefix adds the counters whose names start with prefix.
func sumPrefix(m map[string]uint64, prefix string) uint64 {
	var s uint64
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			s += v
		}
	}
	return s
}

// writeSwitchTable prints a switch's ports, then its busy priorities.
func writeSwitchTable(out io.Writer, n *lab.NodeInfo, ports []lab.PortCounterSet) error {
	// DROPS: the switch's, every reason; WIRE_DROPS: what the emulated
	// wire lost (loss, a full link queue, no peer).
	err := writePortTable(out, n, ports, "RX_PACKETS\tRX_BYTES\tTX_PACKETS\tTX_BYTES\tRX_PAUSE\tTX_PAUSE\tECN_MARKED\tDROPS\tWIRE_DROPS", func(m map[string]uint64) []uint64 {
		return []uint64{m["rx_packets_phy"], m["rx_bytes_phy"], m["tx_packets_phy"], m["tx_bytes_phy"], m["rx_pause_ctrl_phy"], m["tx_pause_ctrl_phy"], sumMarked(m), sumPrefix(m, "drop_"), wireDrops(m)}
	})
	if err != nil {
		return err
	}
	for _, p := range ports {
		if v := p.Counters["headroom_overflow"]; v > 0 {
			fmt.Fprintf(out, "%s: %d lossless frames arrived beyond the PG's headroom (pg<N>_headroom_overflow: admitted, not dropped; the sender reacted to XOFF later than the buffer profile allows for, as a process does in real time)\n", p.Port, v)
		}
	}
	if len(ports) > 0 {
		writeLoopLag(out, n, ports[0].Counters)
	}
	fmt.Fprintln(out)
	return writeClassTable(out, ports, "PRIO\tRX_PACKETS\tTX_PACKETS\tRX_PAUSE\tRX_PAUSE_US\tTX_PAUSE\tTX_PAUSE_US\tECN_MARKED\tDROPS\tQUEUE_WM",
		"no priority of any port counted anything yet", func(m map[string]uint64, prio int) []uint64 {
			k := func(f string) uint64 { return m[fmt.Sprintf(f, prio)] }
			return []uint64{k("rx_prio%d_packets"), k("tx_prio%d_packets"), k("rx_prio%d_pause"), k("rx_prio%d_pause_duration"),
				k("tx_prio%d_pause"), k("tx_prio%d_pause_duration"), k("tx_prio%d_ecn_marked"),
				sumPrefix(m, fmt.Sprintf("prio%d_drop_", prio)), k("queue%d_watermark")}
		})
}

// writeLoopLag says when a daemon's loop ran a millisecond or more late
// (rt.Lag: m is its counters; a switch reports the same on every port):
// a switch saw frames and sent XOFF, ECN marks (FECN on IB) and forwarded
// frames that much late, a NIC sent, acknowledged and paced that late,
// which no buffer profile or timeout allows for. The machine is short of
// CPU for the lab, or the daemon was stopped (kill -STOP, a debugger): its
// loop counts the stop as lag.
func writeLoopLag(out io.Writer, n *lab.NodeInfo, m map[string]uint64) {
	if m["loop_late"] == 0 {
		return
	}
	what := "XOFF, marks and forwarding were that late"
	if n.Kind != lab.KindSwitch {
		what = "its frames, ACKs and CNPs went that late"
	}
	fmt.Fprintf(out, "%s: the daemon ran up to %.1f ms late, %s 1 ms or more (loop_lag_max_ns, loop_late: the machine is short of CPU, or the daemon was stopped; %s, and RC timeouts shorter than it fire)\n",
		n.Name, float64(m["loop_lag_max_ns"])/1e6, times(m["loop_late"]), what)
}

// writeIBSwitchTable is an IB switch's summary: per port the packets and
// bytes (IBA's PortRcvPkts, PortXmitPkts: link packets are not packets
// there, and the bytes are the PortRcvData octets, LRH through ICRC), the
// FECN marks, the time it waited for credits (port_xmit_wait, in
// PortXmitWait's ticks, which are microseconds: mad.XmitWaitTick), the drops
// and the wire's; then per port and VL the flow-control packets each way,
// the credit stalls and the FECN marks. IB has no PAUSE, no ECN and no
// priorities: its layout is the simulator's per VL.
func writeIBSwitchTable(out io.Writer, n *lab.NodeInfo, ports []lab.PortCounterSet) error {
	err := writePortTable(out, n, ports, "RX_PACKETS\tRX_BYTES\tTX_PACKETS\tTX_BYTES\tFECN_MARKED\tXMIT_WAIT_US\tDROPS\tWIRE_DROPS", func(m map[string]uint64) []uint64 {
		return []uint64{m["port_rcv_packets"], 4 * m["port_rcv_data"], m["port_xmit_packets"], 4 * m["port_xmit_data"], sumVL(m, "vl%d_fecn_marked"), m["port_xmit_wait"], sumPrefix(m, "drop_"), wireDrops(m)}
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "RX_PACKETS and TX_PACKETS count IB packets (perfquery's PortRcvPkts, PortXmitPkts); link packets are FC_RX and FC_TX below.")
	if len(ports) > 0 {
		writeLoopLag(out, n, ports[0].Counters)
	}
	fmt.Fprintln(out)
	return writeClassTable(out, ports, "VL\tFC_RX\tFC_TX\tCREDIT_STALLS\tXMIT_WAIT_US\tFECN_MARKED",
		"no VL of any port counted anything yet", func(m map[string]uint64, vl int) []uint64 {
			k := func(f string) uint64 { return m[fmt.Sprintf(f, vl)] }
			return []uint64{k("vl%d_fc_rx"), k("vl%d_fc_tx"), k("vl%d_credit_stalls"), k("vl%d_xmit_wait"), k("vl%d_fecn_marked")}
		})
}

// writePortTable prints one row per port: its name, its peer, then the
// columns named in head (tab-separated) with the values cols gives for
// the port's counters.
func writePortTable(out io.Writer, n *lab.NodeInfo, ports []lab.PortCounterSet, head string, cols func(map[string]uint64) []uint64) error {
	peer := portPeers(n)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "PORT\tPEER\t%s\t\n", head)
	for _, p := range ports {
		m := p.Counters
		fmt.Fprintf(tw, "%s\t%s\t", p.Port, peer(p.Port))
		for _, v := range cols(m) {
			fmt.Fprintf(tw, "%d\t", v)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// writeClassTable prints, per port, one row for each of its eight classes
// (priorities, VLs) that counted anything: the class, then row's values
// under the columns named in header (tab-separated, the class's first);
// none when no class of any port did.
func writeClassTable(out io.Writer, ports []lab.PortCounterSet, header, none string, row func(m map[string]uint64, class int) []uint64) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "PORT\t%s\t\n", header)
	rows := 0
	for _, p := range ports {
		for c := range 8 {
			v := row(p.Counters, c)
			if !slices.ContainsFunc(v, func(x uint64) bool { return x != 0 }) {
				continue
			}
			rows++
			fmt.Fprintf(tw, "%s\t%d\t", p.Port, c)
			for _, x := range v {
				fmt.Fprintf(tw, "%d\t", x)
			}
			fmt.Fprintln(tw)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rows == 0 {
		_, err := fmt.Fprintln(out, none)
		return err
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// portPeers returns a function naming the far end of each of n's ports
// ("-" for none).
func portPeers(n *lab.NodeInfo) func(port string) string {
	peer := map[string]string{}
	for _, p := range n.Ports {
		peer[p.Name] = p.Peer
	}
	return func(port string) string {
		if pr := peer[port]; pr != "" {
			return pr
		}
		return "-"
	}
}

// wireDrops adds the frames a port's emulated wire lost: loss, a full
// link queue, no peer.
func wireDrops(m map[string]uint64) uint64 {
	return m["link_loss_tx"] + m["link_loss_rx"] + m["link_queue_drop"] + m["not_connected_drop"]
}

// sumVL adds a per-VL counter (format with one %d) over the VLs.
func sumVL(m map[string]uint64, format string) uint64 {
	var n uint64
	for vl := range 8 {
		n += m[fmt.Sprintf(format, vl)]
	}
	return n
}

// sumMarked adds a port's per-priority ECN marks (tx_prio<p>_ecn_marked).
func sumMarked(m map[string]uint64) uint64 {
	var s uint64
	for prio := range switchcore.NumPriorities {
		s += m[fmt.Sprintf("tx_prio%d_ecn_marked", prio)]
	}
	return s
}
