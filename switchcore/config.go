package switchcore

import (
	"fmt"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// Default profile and pool names, as SONiC names them.
const (
	IngressLosslessPool = "ingress_lossless_pool"
	IngressLossyPool    = "ingress_lossy_pool"
	EgressLosslessPool  = "egress_lossless_pool"
	EgressLossyPool     = "egress_lossy_pool"
	LosslessPGProfile   = "pg_lossless_profile"
	IngressLossyProfile = "ingress_lossy_profile"
	EgressLosslessProf  = "egress_lossless_profile"
	EgressLossyProfile  = "egress_lossy_profile"
	WREDAzureLossless   = "AZURE_LOSSLESS"
	SchedulerLossy      = "scheduler.0"
	SchedulerLossless   = "scheduler.1"
)

// Defaults.
const (
	DefaultHeadBytes    = 64
	DefaultPFCQuanta    = 0xFFFF
	DefaultPFCWDTime    = 200 * clock.Millisecond
	DefaultIBBlocks     = 256 // 16 KiB per VL per port
	DefaultIBCreditTick = 4096 * clock.Nanosecond
)

// DefaultDSCPToTC returns the DSCP_TO_TC_MAP of the default lab profile.
//
// SONiC's AZURE map sends DSCP 3->3, 4->4, 5->2, 46->5, 48->6, 8->0 and most
// other values to TC 1. That map puts the RoCE-standard DSCP 26 (the NVIDIA
// NIC default, wire-formats.md §10) into TC 1, a lossy class, which would
// make the most common RoCE setup silently lossy. The default lab profile
// therefore uses the map an mlx5 NIC applies with `--trust dscp` and no
// `--dscp2prio` entries, TC = DSCP >> 3 (the top three DSCP bits, the
// IP-precedence mapping), which gives 26 -> 3 (lossless with pfc_enable 3),
// 48 -> 6 (CNPs), 46 -> 5, 8 -> 1, 0 -> 0. AzureDSCPToTC returns SONiC's map
// for labs that want it.
func DefaultDSCPToTC() (m [64]uint8) {
	for d := range m {
		m[d] = uint8(d >> 3)
	}
	return m
}

// AzureDSCPToTC returns SONiC's DSCP_TO_TC_MAP|AZURE: 3->3, 4->4, 5->2,
// 46->5, 48->6, 8->0, everything else -> 1.
func AzureDSCPToTC() (m [64]uint8) {
	for d := range m {
		m[d] = 1
	}
	m[3], m[4], m[5], m[46], m[48], m[8] = 3, 4, 2, 5, 6, 0
	return m
}

// DefaultConfig returns a complete configuration for a switch of n ports at
// speed bits/s, MTU 4200, with SONiC-style defaults:
//   - trust dscp, DSCP_TO_TC_MAP as DefaultDSCPToTC (26 -> TC 3),
//     DOT1P_TO_TC_MAP identity, TC_TO_QUEUE_MAP identity,
//     TC_TO_PRIORITY_GROUP_MAP 3->3, 4->4, 7->7, rest -> 0 (SONiC);
//   - pfc_enable "3,4";
//   - ingress_lossless_pool 12 MiB dynamic, PGs 3,4 bound to a lossless
//     profile (size 0, dynamic_th -3, xon 18432, xon_offset 2496, xoff
//     enough for 300 m of cable at the port speed plus two MTUs);
//   - ingress_lossy_pool 4 MiB dynamic, other PGs dynamic_th 3;
//   - egress: lossless queues unlimited (dynamic_th 7), lossy queues
//     dynamic_th 3 on a 4 MiB egress pool;
//   - WRED AZURE_LOSSLESS on queues 3,4: ecn_all, 1 MiB / 2 MiB / 5 %;
//   - SCHEDULER DWRR weight 14 for lossy queues, 15 for lossless queues;
//   - MAC learning on, store-and-forward, PFC_WD off with SONiC defaults
//     (200 ms / 200 ms / poll 200 ms, drop) ready to enable;
//   - IB: 8 data VLs, SL->VL = SL mod 8, equal low-priority weights.
func DefaultConfig(name string, n int, speed uint64) *Config {
	c := &Config{
		Name:           name,
		Trust:          TrustDSCP,
		DSCPToTC:       DefaultDSCPToTC(),
		TCToPG:         [8]uint8{0, 0, 0, 3, 4, 0, 0, 7},
		MACLearning:    true,
		HeadBytesCT:    DefaultHeadBytes,
		PFCQuanta:      DefaultPFCQuanta,
		ECMPSeed:       0x9E3779B97F4A7C15,
		Seed:           1,
		BufferPools:    map[string]*BufferPool{},
		BufferProfiles: map[string]*BufferProfile{},
		WREDProfiles:   map[string]*WREDProfile{},
		Schedulers:     map[string]*Scheduler{},
		PFCWD: PFCWatchdog{
			DetectionTime: DefaultPFCWDTime, RestorationTime: DefaultPFCWDTime,
			PollInterval: DefaultPFCWDTime, Action: PFCWDDrop,
		},
	}
	for i := range 8 {
		c.Dot1pToTC[i] = uint8(i)
		c.TCToQueue[i] = uint8(i)
		c.PFCPriorityToQueue[i] = uint8(i)
	}
	c.BufferPools[IngressLosslessPool] = &BufferPool{Size: 12 << 20, Type: PoolIngress, Mode: PoolDynamic}
	c.BufferPools[IngressLossyPool] = &BufferPool{Size: 4 << 20, Type: PoolIngress, Mode: PoolDynamic}
	c.BufferPools[EgressLosslessPool] = &BufferPool{Size: 16 << 20, Type: PoolEgress, Mode: PoolDynamic}
	c.BufferPools[EgressLossyPool] = &BufferPool{Size: 4 << 20, Type: PoolEgress, Mode: PoolDynamic}
	c.BufferProfiles[LosslessPGProfile] = &BufferProfile{
		Pool: IngressLosslessPool, DynamicTh: -3, Xon: 18432, XonOffset: 2496,
		Xoff: LosslessHeadroom(speed, 300, 4200+18),
	}
	c.BufferProfiles[IngressLossyProfile] = &BufferProfile{Pool: IngressLossyPool, DynamicTh: 3}
	c.BufferProfiles[EgressLosslessProf] = &BufferProfile{Pool: EgressLosslessPool, DynamicTh: 7}
	c.BufferProfiles[EgressLossyProfile] = &BufferProfile{Pool: EgressLossyPool, Size: 1518, DynamicTh: 3}
	c.WREDProfiles[WREDAzureLossless] = &WREDProfile{
		ECN: ECNAll, GreenMinThreshold: 1 << 20, GreenMaxThreshold: 2 << 20, GreenDropProbability: 5,
	}
	c.Schedulers[SchedulerLossy] = &Scheduler{Type: SchedDWRR, Weight: 14}
	c.Schedulers[SchedulerLossless] = &Scheduler{Type: SchedDWRR, Weight: 15}
	for i := range n {
		p := PortConfig{Name: fmt.Sprintf("p%d", i+1), Speed: speed, MTU: 4200, PFCEnable: 1<<3 | 1<<4}
		for q := range 8 {
			if q == 3 || q == 4 {
				p.BufferQueue[q] = EgressLosslessProf
				p.Scheduler[q] = SchedulerLossless
				p.WRED[q] = WREDAzureLossless
			} else {
				p.BufferQueue[q] = EgressLossyProfile
				p.Scheduler[q] = SchedulerLossy
			}
		}
		for pg := range 8 {
			if pg == 3 || pg == 4 {
				p.BufferPG[pg] = LosslessPGProfile
			} else {
				p.BufferPG[pg] = IngressLossyProfile
			}
		}
		c.Ports = append(c.Ports, p)
	}
	c.IB = IBConfig{
		DataVLs: 8, HighLimit: 0, BufferBlocks: DefaultIBBlocks, CreditUpdateInterval: DefaultIBCreditTick,
	}
	for sl := range 16 {
		c.IB.SL2VL[sl] = uint8(sl % 8)
	}
	for vl := range 8 {
		c.IB.VLArbLow = append(c.IB.VLArbLow, VLArbEntry{VL: uint8(vl), Weight: 64})
	}
	return c
}

// LosslessHeadroom returns a PG headroom (xoff) in bytes that absorbs what
// is in flight after an XOFF: the round trip over cableMeters of fibre
// (5 ns/m) at speed, plus one MTU the peer has started and one we had
// started when the XOFF was generated (cc-anchors §4 "headroom must cover").
func LosslessHeadroom(speed uint64, cableMeters int, mtu int) int {
	rtt := 2 * clock.Time(cableMeters) * 5 * clock.Nanosecond
	return int(clock.BytesIn(rtt, speed)) + 2*mtu + 2*DefaultHeadBytes
}

// HeadroomForDelay returns a PG headroom (xoff) in bytes for a link of
// speed bits/s and one-way propagation delay prop: the bytes the peer sends
// during one round trip, plus one largest frame in flight in each direction
// and the cut-through header allowance. Use it when the link delay is known
// (simulated links) instead of a cable length.
func HeadroomForDelay(speed uint64, prop clock.Time, mtu int) int {
	return int(clock.BytesIn(2*prop, speed)) + 2*mtu + 2*DefaultHeadBytes
}

// validate checks cross references and ranges.
func (c *Config) validate() error {
	if len(c.Ports) == 0 {
		return fmt.Errorf("switch %q: no ports", c.Name)
	}
	for i := range c.DSCPToTC {
		if c.DSCPToTC[i] >= NumPriorities {
			return fmt.Errorf("switch %q: DSCP_TO_TC_MAP %d -> %d out of range", c.Name, i, c.DSCPToTC[i])
		}
	}
	for i := range NumPriorities {
		if c.Dot1pToTC[i] >= NumPriorities || c.TCToPG[i] >= NumPriorities || c.TCToQueue[i] >= NumPriorities ||
			c.PFCPriorityToQueue[i] >= NumPriorities {
			return fmt.Errorf("switch %q: QoS map entry %d out of range", c.Name, i)
		}
	}
	for name, p := range c.BufferProfiles {
		if p == nil {
			return fmt.Errorf("switch %q: BUFFER_PROFILE %s is empty", c.Name, name)
		}
		if _, ok := c.BufferPools[p.Pool]; !ok || c.BufferPools[p.Pool] == nil {
			return fmt.Errorf("switch %q: BUFFER_PROFILE %s: unknown pool %q", c.Name, name, p.Pool)
		}
		if p.DynamicTh < -8 || p.DynamicTh > 7 {
			return fmt.Errorf("switch %q: BUFFER_PROFILE %s: dynamic_th %d out of range [-8, 7]", c.Name, name, p.DynamicTh)
		}
		if p.Size < 0 || p.StaticTh < 0 || p.Xon < 0 || p.Xoff < 0 || p.XonOffset < 0 {
			return fmt.Errorf("switch %q: BUFFER_PROFILE %s: negative size", c.Name, name)
		}
	}
	for name, w := range c.WREDProfiles {
		if w == nil || w.GreenMaxThreshold < w.GreenMinThreshold || w.GreenDropProbability < 0 || w.GreenDropProbability > 100 {
			return fmt.Errorf("switch %q: WRED_PROFILE %s: need min <= max and 0 <= probability <= 100", c.Name, name)
		}
	}
	for name, s := range c.Schedulers {
		if s == nil || (s.Type == SchedDWRR && s.Weight <= 0) {
			return fmt.Errorf("switch %q: SCHEDULER %s: DWRR weight must be > 0", c.Name, name)
		}
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Speed == 0 {
			return fmt.Errorf("switch %q port %s: speed 0", c.Name, p.Name)
		}
		if p.MTU <= 0 {
			return fmt.Errorf("switch %q port %s: mtu %d", c.Name, p.Name, p.MTU)
		}
		if q := c.PFCQuanta; c.PFCRefresh > 0 && q > 0 && c.PFCRefresh >= wire.QuantaToTime(q, p.Speed) {
			return fmt.Errorf("switch %q port %s: PFC refresh %v is not shorter than the pause time %v of %d quanta: the peer would resume between refreshes",
				c.Name, p.Name, c.PFCRefresh, wire.QuantaToTime(q, p.Speed), q)
		}
		for k := range NumPriorities {
			if n := p.BufferPG[k]; n != "" && c.BufferProfiles[n] == nil {
				return fmt.Errorf("switch %q port %s: BUFFER_PG %d: unknown profile %q", c.Name, p.Name, k, n)
			}
			if n := p.BufferQueue[k]; n != "" && c.BufferProfiles[n] == nil {
				return fmt.Errorf("switch %q port %s: BUFFER_QUEUE %d: unknown profile %q", c.Name, p.Name, k, n)
			}
			if n := p.Scheduler[k]; n != "" && c.Schedulers[n] == nil {
				return fmt.Errorf("switch %q port %s: queue %d: unknown SCHEDULER %q", c.Name, p.Name, k, n)
			}
			if n := p.WRED[k]; n != "" && c.WREDProfiles[n] == nil {
				return fmt.Errorf("switch %q port %s: queue %d: unknown WRED_PROFILE %q", c.Name, p.Name, k, n)
			}
		}
	}
	for _, e := range c.L2 {
		if e.Port < 0 || e.Port >= len(c.Ports) {
			return fmt.Errorf("switch %q: L2 entry %v: port %d out of range", c.Name, e.MAC, e.Port)
		}
	}
	for _, r := range c.Routes {
		if !r.Prefix.IsValid() || len(r.Ports) == 0 {
			return fmt.Errorf("switch %q: route %v: need a prefix and at least one port", c.Name, r.Prefix)
		}
		for _, p := range r.Ports {
			if p < 0 || p >= len(c.Ports) {
				return fmt.Errorf("switch %q: route %v: port %d out of range", c.Name, r.Prefix, p)
			}
		}
	}
	if c.PFCWD.Enabled && (c.PFCWD.DetectionTime <= 0 || c.PFCWD.RestorationTime <= 0 || c.PFCWD.PollInterval <= 0) {
		return fmt.Errorf("switch %q: PFC_WD: detection_time, restoration_time and POLL_INTERVAL must be > 0", c.Name)
	}
	if c.Fabric == FabricIB {
		ib := &c.IB
		if ib.DataVLs < 1 || ib.DataVLs > 8 {
			return fmt.Errorf("switch %q: IB: data VLs %d, need 1..8", c.Name, ib.DataVLs)
		}
		if ib.BufferBlocks < 1 || ib.BufferBlocks > 2048 {
			return fmt.Errorf("switch %q: IB: buffer blocks %d, need 1..2048", c.Name, ib.BufferBlocks)
		}
		if ib.CreditUpdateInterval <= 0 {
			return fmt.Errorf("switch %q: IB: credit update interval must be > 0", c.Name)
		}
		for sl, vl := range ib.SL2VL {
			if vl != 15 && int(vl) >= ib.DataVLs {
				return fmt.Errorf("switch %q: IB: SL2VL %d -> VL %d beyond %d data VLs", c.Name, sl, vl, ib.DataVLs)
			}
		}
		for _, t := range [][]VLArbEntry{ib.VLArbHigh, ib.VLArbLow} {
			for _, e := range t {
				if int(e.VL) >= ib.DataVLs {
					return fmt.Errorf("switch %q: IB: VLArb entry VL %d beyond %d data VLs", c.Name, e.VL, ib.DataVLs)
				}
			}
		}
		for d, p := range ib.LFT {
			if p >= len(c.Ports) {
				return fmt.Errorf("switch %q: IB: LFT[%d] = port %d out of range", c.Name, d, p)
			}
		}
		if err := ib.CC.validate(c.Name, len(c.Ports)); err != nil {
			return err
		}
	}
	return nil
}
