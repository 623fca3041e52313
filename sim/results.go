package sim

import (
	"slices"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/switchcore"
)

// Results is what a run produced: plain data the CLI renders as tables,
// CSV and SVG.
type Results struct {
	Seed   uint64
	End    clock.Time // simulated time reached
	Events uint64
	Flows  []FlowResult
	Ports  []PortResult // every connected switch port
	Links  []LinkResult
	Hosts  []HostResult
	// RDMA flows between NIC hosts and the NICs' counters (rdma_results.go).
	RDMA   []RDMAFlowResult
	NICs   []NICResult
	Series *Series // nil without a sample interval
	// Deadlock is set when, after every source stopped, switch queues held
	// bytes and no data frame moved for the deadlock window.
	Deadlock *Deadlock
	// Truncated: the event budget ended the run early.
	Truncated bool
	// FramesOutstanding is the number of pooled frames not returned at the
	// end (queued or in flight, or a leak if the fabric is idle).
	FramesOutstanding int
}

// FlowResult is one traffic source and what its destinations received.
type FlowResult struct {
	Name     string
	Src      string
	Dst      []string
	Priority int
	// Sent: packets, payload bytes, bytes on the wire.
	TxFrames, TxBytes, TxWireBytes uint64
	// Received and verified (ICRC good) at the destinations.
	RxFrames, RxBytes, RxWireBytes uint64
	// PSNGaps counts packets whose PSN was not the expected one: each
	// marks packets lost upstream (drop, corruption, link down).
	PSNGaps uint64
	// CEMarked counts received packets whose IP ECN field was CE (a
	// switch marked them on the way).
	CEMarked                   uint64
	MessagesSent, MessagesDone int
	// Start is when the first byte was sent; FirstRx/LastRx when the first
	// and last packets were received (tail).
	Start, FirstRx, LastRx clock.Time
	// FCT is the flow completion time, first byte sent -> last byte
	// received, when the source finished (its count reached or its stop
	// time passed) and every message it sent completed; 0 otherwise.
	FCT clock.Time
	// Throughput is received payload bits per second over [Start, LastRx]:
	// from the first byte sent to the last byte received, the flow's rate
	// while it moved data. A flow that stopped moving early (stuck behind
	// a deadlock) keeps the rate it had until then.
	Throughput float64
	// Goodput is received payload bits per second over the whole run
	// [0, End], whenever the flow started or stopped.
	Goodput float64
	// Msg are per-message completion times (first byte sent -> last byte
	// received).
	Msg FCTStats
	// IBCC is the flow's IB congestion control (FECNs, BECNs, CCTI); nil
	// when it saw none and had no reaction point.
	IBCC *FlowIBCC
}

// FCTStats summarises message completion times.
type FCTStats struct {
	Count               int
	Mean, P50, P99, Max clock.Time
}

// PortResult is one switch port's counters at the end of the run.
type PortResult struct {
	Switch string
	Port   int
	Name   string
	Peer   string // "node:port" at the other end
	Speed  uint64
	switchcore.PortCounters
}

// LinkResult is one link and both directions' statistics.
type LinkResult struct {
	A, B PortRef
	Rate uint64
	// Dir[0] is A -> B, Dir[1] is B -> A.
	Dir [2]LinkStats
}

// Utilisation is the fraction of [from, to] direction d spent on frames,
// their wire overhead included (Busy), assuming the direction was busy only
// within that window: 1 on a saturated link.
func (l *LinkResult) Utilisation(d int, from, to clock.Time) float64 {
	if to <= from {
		return 0
	}
	return float64(l.Dir[d].Busy) / float64(to-from)
}

// HostResult is one host's counters.
type HostResult struct {
	Name  string
	Stats HostStats
}

// Series are time series sampled every Interval.
type Series struct {
	Interval clock.Time
	Times    []clock.Time
	Queues   []QueueSeries
	Hosts    []HostPauseSeries
	Flows    []FlowSeries
}

// QueueSeries is one switch egress queue: depth in bytes, whether it was
// paused by received PFC, and whether the switch asserted XOFF on the port
// for that priority. On an IB switch Prio is the VL, Paused and Xoff stay
// false (IB links have credits, not pauses) and the credit columns are
// sampled instead.
type QueueSeries struct {
	Switch string
	Port   int
	Prio   int
	Bytes  []int
	Paused []bool
	Xoff   []bool
	// IB: Credits are the 64-byte blocks the port may still send on the
	// VL (its peer's credit limit less what it sent); Starved is whether
	// the VL had bytes queued and fewer credits than one packet of the
	// link's MTU takes (a smaller packet at the head might still go).
	Credits []int
	Starved []bool
}

// HostPauseSeries is whether a host's priority was paused at each sample.
type HostPauseSeries struct {
	Host   string
	Prio   int
	Paused []bool
}

// FlowSeries is one flow's received payload rate over each interval, in
// bits per second.
type FlowSeries struct {
	Flow string
	Bps  []float64
}

// Deadlock reports switch queues that stayed non-empty and constant with no
// data frame delivered anywhere for Window, after every source stopped.
type Deadlock struct {
	Since      clock.Time // last data frame delivery
	DetectedAt clock.Time
	Window     clock.Time
	Queues     []StuckQueue
	// ResolvedAt is when a data frame moved again (e.g. the PFC watchdog
	// dropped the stuck queue); 0 if the deadlock lasted to the end.
	ResolvedAt clock.Time
}

// StuckQueue is one non-empty queue of a deadlock.
type StuckQueue struct {
	Switch string
	Port   int
	Prio   int
	Bytes  int
	Paused bool // egress paused by the peer's PFC
}

func (s *Sim) results() *Results {
	r := &Results{Seed: s.opt.Seed, End: s.now, Events: s.events, Series: s.series, Deadlock: s.deadlock}
	for _, f := range s.flows {
		fr := f.res
		for _, h := range f.dsts {
			sk := h.sinks[f.id]
			if sk == nil || sk.rxFrames == 0 {
				continue
			}
			if fr.RxFrames == 0 || sk.firstRx < fr.FirstRx {
				fr.FirstRx = sk.firstRx
			}
			fr.LastRx = max(fr.LastRx, sk.lastRx)
			fr.RxFrames += sk.rxFrames
			fr.RxBytes += sk.rxB
			fr.RxWireBytes += sk.rxWire
			fr.MessagesDone += sk.messages
			fr.PSNGaps += sk.gaps
			fr.CEMarked += sk.ce
		}
		if fr.LastRx > fr.Start && fr.RxBytes > 0 {
			fr.Throughput = float64(fr.RxBytes) * 8 / (fr.LastRx - fr.Start).Seconds()
		}
		if s.now > 0 {
			fr.Goodput = float64(fr.RxBytes) * 8 / s.now.Seconds()
		}
		if f.done && fr.MessagesSent > 0 && fr.MessagesDone == fr.MessagesSent {
			fr.FCT = fr.LastRx - fr.Start
		}
		fr.Msg = fctStats(f.fcts)
		fr.IBCC = f.ibccResult(s.now)
		r.Flows = append(r.Flows, fr)
	}
	for _, w := range s.switches {
		if w.sw == nil {
			continue
		}
		for i := range w.ports {
			peer, pp := w.peerOf(i)
			if peer == nil {
				continue
			}
			pr := PortResult{Switch: w.name, Port: i, Name: w.cfg.Ports[i].Name, Speed: w.cfg.Ports[i].Speed,
				Peer: s.portName(peer, pp), PortCounters: *w.sw.Counters(i)}
			r.Ports = append(r.Ports, pr)
		}
	}
	for _, l := range s.links {
		r.Links = append(r.Links, LinkResult{A: l.A, B: l.B, Rate: l.Cfg.Rate, Dir: [2]LinkStats{l.dir[0].stats(s.now), l.dir[1].stats(s.now)}})
	}
	for _, h := range s.hosts {
		st := h.Stats
		for p := range st.PausedTime {
			st.PausedTime[p] = h.pausedTotal(p)
		}
		r.Hosts = append(r.Hosts, HostResult{Name: h.cfg.Name, Stats: st})
	}
	s.rdmaResults(r)
	r.FramesOutstanding = s.pool.Outstanding
	return r
}

func (s *Sim) portName(e endpoint, port int) string {
	switch v := e.(type) {
	case *Host:
		return v.cfg.Name + ":0"
	case *nicHost:
		return v.cfg.Name + ":0"
	case *simSwitch:
		if port < len(v.cfg.Ports) && v.cfg.Ports[port].Name != "" {
			return v.name + ":" + v.cfg.Ports[port].Name
		}
		return v.name + ":" + itoa(port)
	}
	return "?"
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		n--
		b[n] = '-'
	}
	return string(b[n:])
}

func fctStats(v []clock.Time) FCTStats {
	if len(v) == 0 {
		return FCTStats{}
	}
	c := slices.Clone(v)
	slices.Sort(c)
	var sum clock.Time
	for _, x := range c {
		sum += x
	}
	pct := func(p float64) clock.Time {
		i := int(p*float64(len(c))+0.999999) - 1
		return c[max(0, min(i, len(c)-1))]
	}
	return FCTStats{Count: len(c), Mean: sum / clock.Time(len(c)), P50: pct(0.5), P99: pct(0.99), Max: c[len(c)-1]}
}

// Flow returns the result of the named flow, or nil.
func (r *Results) Flow(name string) *FlowResult {
	for i := range r.Flows {
		if r.Flows[i].Name == name {
			return &r.Flows[i]
		}
	}
	return nil
}

// Port returns the counters of a switch port, or nil.
func (r *Results) Port(sw string, port int) *PortResult {
	for i := range r.Ports {
		if r.Ports[i].Switch == sw && r.Ports[i].Port == port {
			return &r.Ports[i]
		}
	}
	return nil
}

// Host returns a host's counters, or nil.
func (r *Results) Host(name string) *HostResult {
	for i := range r.Hosts {
		if r.Hosts[i].Name == name {
			return &r.Hosts[i]
		}
	}
	return nil
}

// SwitchDrops sums every switch drop counter by reason (headroom_overflow
// is a configuration error counter, not a drop, and is included as such).
func (r *Results) SwitchDrops() (total uint64, byReason [switchcore.NumDropReasons]uint64) {
	for i := range r.Ports {
		for k, v := range r.Ports[i].Drops {
			byReason[k] += v
			if switchcore.DropReason(k) != switchcore.DropHeadroomOverflow {
				total += v
			}
		}
	}
	return total, byReason
}
