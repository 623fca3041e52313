package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/nicd"
	"github.com/emufabric/emufabric/sim"
	"github.com/emufabric/emufabric/sm"
)

// emulab ib runs an InfiniBand lab's subnet manager in the simulator and
// prints what the SM found and programmed in the shapes infiniband-diags
// uses (ibnetdiscover, ibstat, ibroute), so the emulated fabric reads like
// a real one.

type ibFlags struct {
	node     string
	json     bool
	cut      string
	list     bool
	stateDir string
	port     string // ib counters: a switch's port
}

// ibSweepLimit bounds the simulated time one sweep may take before the
// command gives up (a healthy 22-node sweep takes under a millisecond).
const ibSweepLimit = 100 * clock.Millisecond

func init() {
	var fl ibFlags
	parent := &cobra.Command{
		Use:   "ib",
		Short: "Sweep an InfiniBand lab with the subnet manager and print nodes, ports or routes",
		Long: `ib runs a native InfiniBand lab file (fabric: ib) in the simulator with its
subnet manager: the fabric starts unconfigured, the SM on the ib.sm host (the
first NIC node when the file names none) discovers it with directed-route
SMPs, assigns LIDs, programs every switch's linear forwarding table and makes
the ports Active. The command prints the result of that first heavy sweep:

  nodes    the topology as ibnetdiscover writes it (-l: one line per node)
  ports    every HCA port as ibstat prints it
  routes   every switch's unicast forwarding table as ibroute dumps it

Given the name of a running lab (emulab up) instead of a file, it asks the
subnet manager running in that lab's emunic (ib.sm) for its last sweep.

The lab's traffic and link schedules are not run. --cut A:P takes the link on
port P of node A down after the first sweep; the SM's light sweep notices the
port change, a heavy sweep reroutes around it, and the output shows the fabric
after that re-sweep. A summary of the sweeps goes to standard error.`,
		Example: `  emulab ib nodes examples/ib-fat-tree.yaml
  emulab ib ports examples/ib-two-hosts.yaml --node h2
  emulab ib routes examples/ib-fat-tree.yaml --node leaf1 --cut leaf1:p5
  emulab ib nodes -l examples/ib-fat-tree.yaml --json
  emulab ib routes ib-fat-tree --node leaf1          # a running lab`,
	}
	parent.PersistentFlags().StringVar(&fl.node, "node", "", "only the node called `NAME` (a switch, or an HCA's host)")
	parent.PersistentFlags().BoolVar(&fl.json, "json", false, "print JSON instead of the infiniband-diags text (a lab FILE only)")
	parent.PersistentFlags().StringVar(&fl.cut, "cut", "", "cut the link on `NODE:PORT` after the first sweep and show the re-sweep (a lab FILE only)")
	parent.PersistentFlags().StringVar(&fl.stateDir, "state-dir", lab.DefaultStateRoot, "state directories of running labs live under `DIR`")
	for _, c := range []struct{ use, short string }{
		{"nodes", "The topology, as ibnetdiscover writes it"},
		{"ports", "Every HCA port, as ibstat prints it"},
		{"routes", "Every switch's unicast forwarding table, as ibroute dumps it"},
	} {
		what := c.use
		cmd := &cobra.Command{
			Use:   c.use + " FILE|LAB",
			Short: c.short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return runIB(cmd, what, args[0], &fl)
			},
		}
		if what == "nodes" {
			cmd.Flags().BoolVarP(&fl.list, "list", "l", false, "one line per node, as ibnetdiscover -l")
		}
		parent.AddCommand(cmd)
	}
	parent.AddCommand(ibCountersCmd(&fl))
	rootCmd.AddCommand(parent)
}

// ibRun is one swept fabric.
type ibRun struct {
	spec  *lab.Spec
	s     *sim.Sim
	d     *sim.SubnetManager
	first sm.Stats // after the first heavy sweep
	cut   *ibCutResult
}

type ibCutResult struct {
	Link       string     `json:"link"`
	At         clock.Time `json:"-"`
	AtUS       float64    `json:"cut_at_us"`
	ResweepUS  float64    `json:"resweep_done_at_us"`
	RecoveryUS float64    `json:"recovery_us"`
	SMPs       uint64     `json:"resweep_smps"`
}

func runIB(cmd *cobra.Command, what, file string, fl *ibFlags) error {
	if name, err := labNameArg(file); err == nil && name == file {
		return runIBLive(cmd, what, name, fl)
	}
	spec, err := loadLab(cmd, file)
	if err != nil {
		return err
	}
	if spec.Fabric != lab.FabricIB {
		return &exitError{code: exitBadLabFile, err: fmt.Errorf("%s: fabric %s: emulab ib needs a native InfiniBand lab (fabric: ib)", file, spec.Fabric)}
	}
	r, err := sweepIB(spec, fl.cut)
	if err != nil {
		return err
	}
	r.summary(cmd.ErrOrStderr())
	t := r.d.SM().Topology()
	var sel *sm.Node
	if fl.node != "" {
		if sel = t.Node(sim.IBGUID(fl.node)); sel == nil {
			return &exitError{code: exitRunFailed, err: fmt.Errorf("--node %s: not in the swept fabric (no such node, or cut off from the subnet manager)", fl.node)}
		}
		if what == "ports" && sel.IsSwitch() {
			return &exitError{code: exitRunFailed, err: fmt.Errorf("--node %s is a switch: ports shows HCAs (ibstat); try nodes --node %s", fl.node, fl.node)}
		}
		if what == "routes" && !sel.IsSwitch() {
			return &exitError{code: exitRunFailed, err: fmt.Errorf("--node %s is an HCA: routes shows switches' forwarding tables", fl.node)}
		}
	}
	out := cmd.OutOrStdout()
	if fl.json {
		return r.writeJSON(out, what, sel)
	}
	if what == "nodes" && fl.list {
		what = "list"
	}
	return t.Write(out, what, sel)
}

// runIBLive prints the sweep of the SM running in lab name's emunic.
func runIBLive(cmd *cobra.Command, what, name string, fl *ibFlags) error {
	if fl.json || fl.cut != "" {
		return fmt.Errorf("lab %s: --json and --cut work on a lab file (the simulator); on a running lab, cut with `emulab link set`", name)
	}
	st, err := lab.ReadStatus(fl.stateDir, name)
	if err != nil || st.Info == nil {
		return fmt.Errorf("lab %s: not up (%v); give a lab file to sweep it in the simulator", name, err)
	}
	static := "emulab ib " + what + " " + st.Info.File // the lab file's view, in the simulator
	if what == "nodes" && fl.list {
		what = "list"
		static = "emulab ib nodes --list " + st.Info.File
	}
	var dead []string
	for _, n := range st.Info.Nodes {
		if n.Kind != lab.KindNIC || n.Control == "" {
			continue
		}
		var r nicd.Response
		if err := lab.ControlRequest(n.Control, map[string]string{"op": "status"}, &r, 5*time.Second); err != nil {
			dead = append(dead, n.Name)
			continue
		}
		if r.Status == nil || r.Status.SM == nil {
			continue
		}
		var out nicd.Response
		if err := lab.ControlRequest(n.Control, &nicd.Request{Op: "sm", What: what, Node: fl.node}, &out, 10*time.Second); err != nil {
			return fmt.Errorf("lab %s: subnet manager on %s: %w", name, n.Name, err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "subnet manager on %s: %d heavy sweeps, %d light sweeps, last heavy sweep %d nodes, %d SMPs in %.1f ms\n",
			n.Name, r.Status.SM.HeavySweeps, r.Status.SM.LightSweeps, r.Status.SM.Nodes, r.Status.SM.LastSweepSMPs, r.Status.SM.LastSweepUs/1000)
		_, err := io.WriteString(cmd.OutOrStdout(), out.Text)
		return err
	}
	if spec, err := lab.Load(st.Info.File); err == nil && spec.IB != nil && spec.IB.SM != nil && slices.Contains(dead, spec.IB.SM.Host) {
		// The file names the SM's host, whose daemon is gone: the ports
		// keep the LIDs and tables it set, as on a fabric whose SM died.
		stats := "emulab stats"
		if fl.stateDir != lab.DefaultStateRoot {
			stats += " --state-dir " + fl.stateDir
		}
		return fmt.Errorf("lab %s: the subnet manager runs in %s's emunic, which does not answer (`%s`); the ports keep what it set, and `%s %s/NODE` shows each HCA's port", name, spec.IB.SM.Host, lab.StatusCommand(fl.stateDir, name), stats, name)
	}
	// Without an SM the LIDs and forwarding tables are the lab file's,
	// which the static view shows.
	return fmt.Errorf("lab %s: no emunic runs a subnet manager (the lab file has no ib.sm, or its LIDs are static): `%s` shows the fabric its lab file describes, swept in the simulator", name, static)
}

// loadLab loads a lab file, printing its problems and warnings as emulab
// sim does.
func loadLab(cmd *cobra.Command, file string) (*lab.Spec, error) {
	return loadLabFor(file, cmd.ErrOrStderr(), "nothing was run")
}

// sweepIB builds the lab without its traffic and link schedules, runs
// the SM's first heavy sweep and, with cut, the re-sweep after cutting
// that link.
func sweepIB(spec *lab.Spec, cut string) (*ibRun, error) {
	spec.Traffic = nil
	for _, l := range spec.Links {
		l.Schedule = nil
	}
	if spec.IB.SM == nil {
		for _, n := range spec.Nodes {
			if n.Kind == lab.KindNIC {
				spec.IB.SM = &lab.IBSubnetManager{Host: n.Name, SweepInterval: lab.DefaultIBSweepInterval}
				break
			}
		}
		if spec.IB.SM == nil {
			return nil, &exitError{code: exitBadLabFile, err: fmt.Errorf("%s: no NIC node to run the subnet manager on", spec.File)}
		}
	}
	if spec.IB.SM.SweepInterval == 0 && cut != "" {
		return nil, &exitError{code: exitBadLabFile, err: fmt.Errorf("--cut: %s sets sweep_interval 0, so the SM would never notice the cut", spec.File)}
	}
	cutLink := -1
	if cut != "" {
		i, err := findLink(spec, cut)
		if err != nil {
			return nil, &exitError{code: exitBadLabFile, err: err}
		}
		cutLink = i
	}
	s, err := sim.Build(spec, spec.Sim.Seed)
	if err != nil {
		return nil, &exitError{code: exitRunFailed, err: err}
	}
	r := &ibRun{spec: spec, s: s, d: s.SubnetManager()}
	if err := r.runSweeps(1, ibSweepLimit); err != nil {
		return nil, err
	}
	r.first = r.d.SM().Stats()
	if cutLink < 0 {
		return r, nil
	}
	l := spec.Links[cutLink]
	at := s.Now()
	s.Links()[cutLink].SetUp(false)
	if err := r.runSweeps(2, at+ibSweepLimit); err != nil {
		return nil, err
	}
	st := r.d.SM().Stats()
	r.cut = &ibCutResult{
		Link: l.A.String() + " - " + l.B.String(), At: at, AtUS: us(at),
		ResweepUS: us(st.LastSweepEnd), RecoveryUS: us(st.LastSweepEnd - at), SMPs: st.LastSweepSMPs,
	}
	return r, nil
}

// runSweeps runs until the SM has completed n heavy sweeps, in 10 µs
// steps, up to the simulated time limit.
func (r *ibRun) runSweeps(n int, limit clock.Time) error {
	const step = 10 * clock.Microsecond
	for r.d.SM().Stats().HeavySweeps < n {
		if r.s.Now() >= limit {
			return &exitError{code: exitRunFailed, err: fmt.Errorf("%s: the subnet manager did not finish sweep %d within %v; errors: %s",
				r.spec.File, n, limit, strings.Join(r.d.SM().Errors(), "; "))}
		}
		if err := r.s.RunUntil(r.s.Now() + step); err != nil {
			return &exitError{code: exitRunFailed, err: fmt.Errorf("%s: %w", r.spec.File, err)}
		}
	}
	return nil
}

func us(t clock.Time) float64 { return float64(t) / float64(clock.Microsecond) }

// findLink returns the index of the lab link on port "node:port".
func findLink(spec *lab.Spec, ref string) (int, error) {
	node, port, ok := strings.Cut(ref, ":")
	if !ok {
		return -1, fmt.Errorf("--cut %q: expected NODE:PORT such as leaf1:p5", ref)
	}
	for i, l := range spec.Links {
		for _, p := range []*lab.Port{l.A, l.B} {
			if p.Node.Name == node && p.Name == port {
				return i, nil
			}
		}
	}
	return -1, fmt.Errorf("--cut %q: no link on that port in %s", ref, spec.File)
}

func (r *ibRun) summary(w io.Writer) {
	st := r.first
	host := r.spec.IB.SM.Host
	fmt.Fprintf(w, "subnet manager on %s: heavy sweep of %d nodes (%d switches), %d SMPs, %.1f µs simulated, done at %.1f µs\n",
		host, st.Nodes, st.Switches, st.LastSweepSMPs, us(st.LastSweepTime), us(st.LastSweepEnd))
	if c := r.cut; c != nil {
		fmt.Fprintf(w, "link %s cut at %.1f µs: re-sweep (%d SMPs) done at %.1f µs, %.1f µs after the cut\n",
			c.Link, c.AtUS, c.SMPs, c.ResweepUS, c.RecoveryUS)
	}
	if errs := r.d.SM().Errors(); len(errs) > 0 {
		fmt.Fprintf(w, "subnet manager errors: %s\n", strings.Join(errs, "; "))
	}
}

// labName is the lab node a swept node stands for: a switch's
// description, an HCA's first word ("h1 HCA-1").
func labName(n *sm.Node) string {
	name, _, _ := strings.Cut(n.Desc, " ")
	return name
}

// JSON shapes.

type ibJSONSweep struct {
	SMHost     string       `json:"sm_host"`
	Nodes      int          `json:"nodes"`
	Switches   int          `json:"switches"`
	SMPs       uint64       `json:"smps"`
	SweepUS    float64      `json:"sweep_us"`
	DoneAtUS   float64      `json:"done_at_us"`
	Cut        *ibCutResult `json:"cut,omitempty"`
	SMErrors   []string     `json:"sm_errors,omitempty"`
	MaxLID     uint16       `json:"max_lid"`
	LightSweep float64      `json:"sweep_interval_us"`
}

type ibJSONPort struct {
	Port          int     `json:"port"`
	GUID          string  `json:"guid"`
	LID           uint16  `json:"lid"`
	State         string  `json:"state"`
	PhysicalState string  `json:"physical_state"`
	RateGbps      float64 `json:"rate_gbps"`
	SMLID         uint16  `json:"sm_lid"`
	Peer          string  `json:"peer,omitempty"`
	PeerPort      int     `json:"peer_port,omitempty"`
}

type ibJSONNode struct {
	Name  string       `json:"name"`
	Desc  string       `json:"description"`
	Type  string       `json:"type"`
	GUID  string       `json:"guid"`
	LID   uint16       `json:"lid"`
	Ports []ibJSONPort `json:"ports"`
}

type ibJSONRoute struct {
	LID         uint16 `json:"lid"`
	Port        int    `json:"port"`
	Destination string `json:"destination"`
}

type ibJSONSwitch struct {
	Switch string        `json:"switch"`
	GUID   string        `json:"guid"`
	LID    uint16        `json:"lid"`
	Routes []ibJSONRoute `json:"routes"`
}

func (r *ibRun) writeJSON(w io.Writer, what string, sel *sm.Node) error {
	t := r.d.SM().Topology()
	out := map[string]any{"sweep": ibJSONSweep{
		SMHost: r.d.Host().Name(), Nodes: r.first.Nodes, Switches: r.first.Switches, SMPs: r.first.LastSweepSMPs,
		SweepUS: us(r.first.LastSweepTime), DoneAtUS: us(r.first.LastSweepEnd), Cut: r.cut, SMErrors: r.d.SM().Errors(),
		MaxLID: t.MaxLID, LightSweep: us(r.spec.IB.SM.SweepInterval),
	}}
	pick := func(all []*sm.Node) []*sm.Node {
		if sel == nil {
			return all
		}
		return []*sm.Node{sel}
	}
	switch what {
	case "nodes", "ports":
		nodes := t.Nodes
		if what == "ports" {
			nodes = t.CAs()
		}
		var list []ibJSONNode
		for _, n := range pick(nodes) {
			list = append(list, jsonNode(n))
		}
		out["nodes"] = list
	default:
		owners := map[uint16]sm.LIDEntry{}
		for _, e := range t.LIDs() {
			owners[e.LID] = e
		}
		var list []ibJSONSwitch
		for _, s := range pick(t.Switches()) {
			js := ibJSONSwitch{Switch: labName(s), GUID: fmt.Sprintf("0x%016x", s.GUID), LID: s.LID, Routes: []ibJSONRoute{}}
			for lid, port := range t.LFT[s.GUID] {
				e, ok := owners[uint16(lid)]
				if port == mad.LFTNoPort || !ok {
					continue
				}
				js.Routes = append(js.Routes, ibJSONRoute{LID: uint16(lid), Port: int(port), Destination: labName(e.Node)})
			}
			list = append(list, js)
		}
		out["switches"] = list
	}
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(out)
}

func jsonNode(n *sm.Node) ibJSONNode {
	jn := ibJSONNode{Name: labName(n), Desc: n.Desc, Type: "ca", GUID: fmt.Sprintf("0x%016x", n.GUID), LID: n.LID, Ports: []ibJSONPort{}}
	if n.IsSwitch() {
		jn.Type = "switch"
	}
	for _, p := range n.Ports {
		if p == nil || p.Num == 0 {
			continue
		}
		f := &p.Info
		jp := ibJSONPort{
			Port: p.Num, GUID: fmt.Sprintf("0x%016x", p.GUID), LID: f.LID,
			State: mad.PortStateName(f.PortState), PhysicalState: mad.PhysStateName(f.PhysState),
			RateGbps: f.RateGbps(),
			SMLID:    f.MasterSMLID,
		}
		if n.IsSwitch() {
			jp.LID = 0 // a switch's external ports have no LID (port 0 holds it)
		}
		if p.Peer != nil {
			jp.Peer, jp.PeerPort = labName(p.Peer), p.PeerPort
		}
		jn.Ports = append(jn.Ports, jp)
	}
	return jn
}
