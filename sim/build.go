package sim

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"strings"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/switchcore"
)

// Build turns a loaded lab spec into a simulation: one switchcore switch
// per switch node (its QoS tables converted to switchcore.Config), one
// simulated host per NIC node, one link per spec link and one source per
// traffic flow. seed replaces the spec's seed (the CLI passes --seed or
// spec.Sim.Seed).
//
// An IB lab with an ib.sm section comes back already started, its fabric
// handed to a subnet manager (ManageIB, build_ib.go): SubnetManager
// returns it.
func Build(spec *lab.Spec, seed uint64) (*Sim, error) {
	if spec == nil {
		return nil, fmt.Errorf("sim: no lab spec")
	}
	s := New(Options{
		Seed:           seed,
		Duration:       spec.Sim.Duration,
		SampleInterval: spec.Sim.SampleInterval,
		EventBudget:    spec.Sim.MaxEvents,
		DeadlockWindow: spec.Sim.DeadlockWindow,
	})
	ib := spec.Fabric == lab.FabricIB
	for _, n := range spec.Nodes {
		var err error
		switch n.Kind {
		case lab.KindSwitch:
			var cfg *switchcore.Config
			if cfg, err = SwitchConfig(spec, n, seed); err == nil {
				err = s.AddSwitch(n.Name, cfg)
			}
		case lab.KindNIC:
			if n.RDMA {
				err = s.AddNIC(nicConfig(spec, n))
			} else {
				err = s.AddHost(hostConfig(spec, n, ib))
			}
		default:
			err = fmt.Errorf("sim: node %s: unknown kind %q", n.Name, n.Kind)
		}
		if err != nil {
			return nil, specErr(spec, n.Line, err)
		}
	}
	for _, l := range spec.Links {
		lc := LinkConfig{Rate: l.Rate, Delay: l.Delay, MTU: l.MTU, Loss: l.Loss, Corrupt: l.Corrupt}
		for _, ev := range l.Schedule {
			lc.Events = append(lc.Events, LinkEvent{At: ev.At, Up: ev.Up})
		}
		a := PortRef{Node: l.A.Node.Name, Port: l.A.Index}
		b := PortRef{Node: l.B.Node.Name, Port: l.B.Index}
		if _, err := s.Connect(a, b, lc); err != nil {
			return nil, specErr(spec, l.Line, err)
		}
	}
	for _, fl := range spec.Traffic {
		if fl.Op != lab.OpNone {
			if err := s.AddRDMAFlow(rdmaFlowConfig(spec, fl)); err != nil {
				return nil, specErr(spec, fl.Line, err)
			}
			continue
		}
		fc, err := flowConfig(fl)
		if err == nil {
			err = s.AddFlow(fc)
		}
		if err != nil {
			return nil, specErr(spec, fl.Line, err)
		}
	}
	if err := manageFromSpec(s, spec); err != nil {
		return nil, fmt.Errorf("%s: ib.sm: %w", spec.File, err)
	}
	return s, nil
}

func specErr(spec *lab.Spec, line int, err error) error {
	return fmt.Errorf("%s:%d: %w", spec.File, line, err)
}

func hostConfig(spec *lab.Spec, n *lab.Node, ib bool) HostConfig {
	hc := HostConfig{Name: n.Name, MAC: n.MAC, IP: n.IPv4, LID: n.LID, Tagged: n.Tagged, VID: n.VID, IgnorePFC: n.IgnorePFC}
	if n.Storm != nil {
		hc.Storm = &PFCStorm{Priority: int(n.Storm.Priority), Start: n.Storm.Start, Stop: n.Storm.Stop, Interval: n.Storm.Interval}
	}
	if ib {
		hc.Fabric = FabricIB
		if ibc := spec.IBOf(n); ibc != nil {
			hc.IBDataVLs, hc.IBBlocksPerVL = ibc.MaxVLs, ibc.BlocksPerVL()
			sl2vl := ibc.SLToVL()
			hc.IBSL2VL = &sl2vl
			hc.IBCC = hostIBCC(ibc) // ibcc_build.go
		}
	}
	return hc
}

func flowConfig(fl *lab.Flow) (FlowConfig, error) {
	fc := FlowConfig{
		Name: fl.Name, Src: fl.Src.Name, Rate: fl.Rate, Count: fl.Count, Start: fl.Start, Stop: fl.Stop,
		On: fl.On, Off: fl.Off, Load: fl.Load, DSCP: fl.DSCP, Priority: int(fl.Priority), ECT: fl.ECN,
		PMTU: fl.PMTU, SL: fl.SL, SrcPort: fl.SrcPort,
	}
	for _, d := range fl.Dst {
		fc.Dst = append(fc.Dst, d.Name)
	}
	switch fl.Kind {
	case lab.FlowUDSend:
		fc.Kind = UDSend
	default:
		fc.Kind = RDMAWrite
	}
	switch fl.Arrival {
	case lab.ArrivalPoisson:
		fc.Pattern = Poisson
	case lab.ArrivalOnOff:
		fc.Pattern = OnOff
	default:
		fc.Pattern = Constant
	}
	sz := fl.Size
	switch sz.Dist {
	case lab.DistUniform:
		fc.Size = SizeDist{Kind: Uniform, Min: int(sz.Min), Max: int(sz.Max)}
	case lab.DistExponential:
		fc.Size = SizeDist{Kind: Exponential, Bytes: int(sz.Mean), Min: int(sz.Min), Max: int(sz.Max)}
	case lab.DistCDF:
		fc.Size = SizeDist{Kind: Empirical}
		for _, p := range sz.Points {
			fc.Size.CDF = append(fc.Size.CDF, CDFPoint{Bytes: int(p.Size), P: p.P})
		}
	default:
		fc.Size = SizeDist{Kind: Fixed, Bytes: int(sz.Size)}
	}
	return fc, nil
}

// SwitchConfig converts a switch node of a lab spec, with its effective QoS
// (SONiC tables), into a switchcore.Config: switchcore.DefaultConfig first,
// then every table the file writes. Port speeds and MTUs come from the
// attached links. Routes the file does not give are added at Start along
// shortest paths.
func SwitchConfig(spec *lab.Spec, n *lab.Node, seed uint64) (*switchcore.Config, error) {
	speed := spec.Defaults.Rate
	for _, p := range n.Ports {
		if p.Link != nil {
			speed = p.Link.Rate
			break
		}
	}
	cfg := switchcore.DefaultConfig(n.Name, len(n.Ports), speed)
	ib := spec.Fabric == lab.FabricIB
	if ib {
		cfg.Fabric = switchcore.FabricIB
	}
	for i, p := range n.Ports {
		pc := &cfg.Ports[i]
		pc.Name = p.Name
		if p.Link != nil {
			pc.Speed = p.Link.Rate
			if p.Link.MTU > 0 {
				pc.MTU = p.Link.MTU
				if ib {
					pc.MTU = p.Link.MTU + ibOverhead
				}
			}
		}
	}
	switch n.Trust {
	case lab.TrustPCP:
		cfg.Trust = switchcore.TrustPCP
	case lab.TrustDSCP:
		cfg.Trust = switchcore.TrustDSCP
	}
	cfg.CutThrough = n.CutThrough
	if n.HeaderBytes > 0 {
		cfg.HeadBytesCT = n.HeaderBytes
	}
	cfg.ECMPSeed = n.ECMPSeed
	cfg.MACLearning = n.MACLearning
	// The switches route (L3, ECMP) and their routes change as links go
	// down (link-state routing): a packet caught in a loop while they
	// converge dies of its TTL, as at a router, instead of circulating
	// for ever on a lossless class.
	cfg.DecrementTTL = !ib
	if n.PFCQuanta != 0 {
		cfg.PFCQuanta = n.PFCQuanta
	}
	if n.PFCRefresh != 0 {
		cfg.PFCRefresh = n.PFCRefresh
	}
	if n.ECNMarkAt == lab.MarkEnqueue {
		cfg.ECNMarkAt = switchcore.MarkAtEnqueue
	}
	h := fnv.New64a()
	h.Write([]byte(n.Name))
	cfg.Seed = seed ^ h.Sum64()
	for _, r := range n.Routes {
		if ib {
			dst := spec.Node(r.Dst)
			if dst == nil || len(r.Via) == 0 {
				return nil, fmt.Errorf("sim: switch %s: IB route to %q needs a node and a port", n.Name, r.Dst)
			}
			for len(cfg.IB.LFT) <= int(dst.LID) {
				cfg.IB.LFT = append(cfg.IB.LFT, -1)
			}
			cfg.IB.LFT[dst.LID] = r.Via[0]
			continue
		}
		pfx := netip.PrefixFrom(netip.AddrFrom4(r.Prefix), r.Len)
		cfg.Routes = append(cfg.Routes, switchcore.Route{Prefix: pfx.Masked(), Ports: append([]int(nil), r.Via...)})
	}
	if ib {
		ibc := n.IB
		if ibc == nil {
			ibc = spec.IB
		}
		if ibc != nil {
			applyIB(&cfg.IB, ibc)
			applyIBCC(&cfg.IB, ibc, n) // ibcc_build.go
		}
	}
	if n.QoS != nil {
		if err := applyQoS(cfg, n.QoS); err != nil {
			return nil, fmt.Errorf("sim: switch %s: %w", n.Name, err)
		}
	}
	if !ib && (n.QoS == nil || n.QoS.BufferProfiles[switchcore.LosslessPGProfile] == nil) {
		sizeBuiltinHeadroom(cfg, n)
	}
	return cfg, nil
}

// sizeBuiltinHeadroom gives each port whose lossless PGs use the built-in
// pg_lossless_profile (the file does not define it) a headroom sized for
// its own link, as SONiC's buffer manager makes a profile per port speed
// and cable length (pg_lossless_<speed>_<cable>m_profile): the built-in
// profile is sized for 300 m of cable at the switch's first port's speed,
// and a longer link, or a faster port, overflowed it (headroom_overflow
// on a parking lot whose links were 10 us long, with no warning).
func sizeBuiltinHeadroom(cfg *switchcore.Config, n *lab.Node) {
	base := cfg.BufferProfiles[switchcore.LosslessPGProfile]
	for i, lp := range n.Ports {
		pc := &cfg.Ports[i]
		if lp.Link == nil {
			continue
		}
		xoff, cable := BuiltinHeadroom(pc.Speed, lp.Link.Delay, pc.MTU)
		if xoff <= base.Xoff {
			continue
		}
		name := fmt.Sprintf("pg_lossless_%d_%dm_profile", pc.Speed/1_000_000, cable)
		if cfg.BufferProfiles[name] == nil {
			bp := *base
			bp.Xoff = xoff
			cfg.BufferProfiles[name] = &bp
		}
		for pg := range switchcore.NumPriorities {
			if pc.BufferPG[pg] == switchcore.LosslessPGProfile {
				pc.BufferPG[pg] = name
			}
		}
	}
}

// BuiltinHeadroom is the lossless headroom (xoff, bytes) the built-in
// profile gives a port of speed whose link has the one-way delay and the
// L3 MTU, and the cable length in metres it stands for (5 ns a metre, at
// least the built-in's 300 m).
func BuiltinHeadroom(speed uint64, delay clock.Time, mtu int) (xoff, cable int) {
	cable = max(300, int(delay/(5*clock.Nanosecond)))
	return switchcore.LosslessHeadroom(speed, cable, mtu+18), cable
}

// BuiltinHeadroomPGs is the PGs of a switch port whose headroom the
// built-in sizing decides (the file does not define pg_lossless_profile,
// and the PG is bound to it or to the per-link profile made from it): a
// run-time change of the port's speed or delay re-sizes them, as SONiC's
// buffer manager does.
func BuiltinHeadroomPGs(cfg *switchcore.Config, n *lab.Node, port int) uint8 {
	if n.QoS != nil && n.QoS.BufferProfiles[switchcore.LosslessPGProfile] != nil {
		return 0
	}
	var m uint8
	for pg, name := range cfg.Ports[port].BufferPG {
		own := n.QoS != nil && n.QoS.BufferProfiles[name] != nil
		if !own && (name == switchcore.LosslessPGProfile || strings.HasPrefix(name, "pg_lossless_") && strings.HasSuffix(name, "m_profile")) {
			m |= 1 << pg
		}
	}
	return m
}

func applyIB(c *switchcore.IBConfig, ibc *lab.IBConfig) {
	if ibc.MaxVLs > 0 {
		c.DataVLs = min(ibc.MaxVLs, 8)
	}
	c.SL2VL = ibc.SL2VL
	if len(ibc.VLArbHigh) > 0 {
		c.VLArbHigh = nil
		for _, e := range ibc.VLArbHigh {
			c.VLArbHigh = append(c.VLArbHigh, switchcore.VLArbEntry{VL: e.VL, Weight: e.Weight})
		}
	}
	if len(ibc.VLArbLow) > 0 {
		c.VLArbLow = nil
		for _, e := range ibc.VLArbLow {
			c.VLArbLow = append(c.VLArbLow, switchcore.VLArbEntry{VL: e.VL, Weight: e.Weight})
		}
	}
	c.HighLimit = ibc.HighLimit
	if ibc.VLBuffer > 0 {
		c.BufferBlocks = min(int(ibc.VLBuffer/64), 2048)
	}
	if ibc.CreditUpdate > 0 {
		c.CreditUpdateInterval = ibc.CreditUpdate
	}
}

// applyQoS writes a spec's SONiC tables over the defaults.
func applyQoS(cfg *switchcore.Config, q *lab.QoS) error {
	if m := q.PortQoSMap; m != nil && m.PFCEnableSet {
		for i := range cfg.Ports {
			cfg.Ports[i].PFCEnable = m.PFCEnable
		}
	}
	for k, v := range q.DSCPToTC {
		cfg.DSCPToTC[k&63] = v & 7
	}
	for k, v := range q.Dot1pToTC {
		cfg.Dot1pToTC[k&7] = v & 7
	}
	for k, v := range q.TCToPG {
		cfg.TCToPG[k&7] = v & 7
	}
	for k, v := range q.TCToQueue {
		cfg.TCToQueue[k&7] = v & 7
	}
	for k, v := range q.PFCPrioToQueue {
		cfg.PFCPriorityToQueue[k&7] = v & 7
	}
	for name, p := range q.BufferPools {
		bp := &switchcore.BufferPool{Size: int(p.Size), Xoff: int(p.Xoff)}
		if p.Type == lab.PoolEgress {
			bp.Type = switchcore.PoolEgress
		}
		if p.Mode == lab.PoolStatic {
			bp.Mode = switchcore.PoolStatic
		}
		cfg.BufferPools[name] = bp
	}
	for name, p := range q.BufferProfiles {
		bp := &switchcore.BufferProfile{Pool: p.Pool, Size: int(p.Size), Xon: int(p.Xon), Xoff: int(p.Xoff), XonOffset: int(p.XonOffset)}
		if p.HasDynamicTh {
			bp.DynamicTh = p.DynamicTh
		} else {
			bp.StaticTh = int(p.StaticTh)
		}
		cfg.BufferProfiles[name] = bp
	}
	forPorts := func(ports []int, fn func(pc *switchcore.PortConfig)) error {
		if ports == nil {
			for i := range cfg.Ports {
				fn(&cfg.Ports[i])
			}
			return nil
		}
		for _, i := range ports {
			if i < 0 || i >= len(cfg.Ports) {
				return fmt.Errorf("port index %d out of range", i)
			}
			fn(&cfg.Ports[i])
		}
		return nil
	}
	for _, b := range q.BufferPG {
		if err := forPorts(b.Ports, func(pc *switchcore.PortConfig) {
			for id := 0; id < 8; id++ {
				if b.IDs&(1<<id) != 0 {
					pc.BufferPG[id] = b.Profile
				}
			}
		}); err != nil {
			return fmt.Errorf("BUFFER_PG: %w", err)
		}
	}
	for _, b := range q.BufferQueue {
		if err := forPorts(b.Ports, func(pc *switchcore.PortConfig) {
			for id := 0; id < 8; id++ {
				if b.IDs&(1<<id) != 0 {
					pc.BufferQueue[id] = b.Profile
				}
			}
		}); err != nil {
			return fmt.Errorf("BUFFER_QUEUE: %w", err)
		}
	}
	for name, w := range q.WREDProfiles {
		wp := &switchcore.WREDProfile{
			WREDGreenEnable:   w.Green.Enable,
			GreenMinThreshold: int(w.Green.MinThreshold), GreenMaxThreshold: int(w.Green.MaxThreshold),
			GreenDropProbability: w.Green.DropProbability,
		}
		// Simulated traffic is green: modes that mark green mark it.
		switch w.ECN {
		case lab.ECNAll:
			wp.ECN = switchcore.ECNAll
		case lab.ECNGreen, lab.ECNGreenYellow, lab.ECNGreenRed:
			wp.ECN = switchcore.ECNGreen
		default:
			wp.ECN = switchcore.ECNNone
		}
		cfg.WREDProfiles[name] = wp
	}
	for name, sc := range q.Schedulers {
		sp := &switchcore.Scheduler{Type: switchcore.SchedDWRR, Weight: sc.Weight}
		if sc.Type == lab.SchedStrict {
			sp.Type = switchcore.SchedStrict
		}
		cfg.Schedulers[name] = sp
	}
	for _, b := range q.Queues {
		if err := forPorts(b.Ports, func(pc *switchcore.PortConfig) {
			for id := 0; id < 8; id++ {
				if b.Queues&(1<<id) == 0 {
					continue
				}
				if b.Scheduler != "" {
					pc.Scheduler[id] = b.Scheduler
				}
				if b.WREDProfile != "" {
					pc.WRED[id] = b.WREDProfile
				}
			}
		}); err != nil {
			return fmt.Errorf("QUEUE: %w", err)
		}
	}
	if wd := q.PFCWD; wd != nil {
		cfg.PFCWD.Enabled = true
		if wd.PollInterval > 0 {
			cfg.PFCWD.PollInterval = wd.PollInterval
		}
		pp := wd
		if pp.DetectionTime > 0 {
			cfg.PFCWD.DetectionTime = pp.DetectionTime
		}
		if pp.RestorationTime > 0 {
			cfg.PFCWD.RestorationTime = pp.RestorationTime
		}
		switch pp.Action {
		case lab.PFCWDForward:
			cfg.PFCWD.Action = switchcore.PFCWDForward
		case lab.PFCWDAlert:
			cfg.PFCWD.Action = switchcore.PFCWDAlert
		case lab.PFCWDDrop:
			cfg.PFCWD.Action = switchcore.PFCWDDrop
		}
	}
	return nil
}
