package sim

import (
	"fmt"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/nic"
)

// RDMAOp is the verb an RDMA flow posts.
type RDMAOp uint8

const (
	OpWrite RDMAOp = iota // IBV_WR_RDMA_WRITE: data flows Src -> Dst
	OpRead                // IBV_WR_RDMA_READ: Src reads Dst's memory, data flows Dst -> Src
	OpSend                // IBV_WR_SEND: Dst keeps receive WQEs posted
)

func (o RDMAOp) String() string {
	switch o {
	case OpRead:
		return "read"
	case OpSend:
		return "send"
	}
	return "write"
}

func (o RDMAOp) verb() nic.WROpcode {
	switch o {
	case OpRead:
		return nic.IBV_WR_RDMA_READ
	case OpSend:
		return nic.IBV_WR_SEND
	}
	return nic.IBV_WR_RDMA_WRITE
}

// RDMAFlowConfig is a perftest-like traffic source between two NIC hosts:
// QPs reliable connections, each posting Count messages of Size bytes
// (or until Stop) with Depth in flight, from Start.
type RDMAFlowConfig struct {
	Name     string
	Src, Dst string
	Op       RDMAOp
	Size     int // message bytes, 1..1 GiB
	Count    int // messages per QP; 0: until Stop
	QPs      int // connections; zero: 1
	Depth    int // messages in flight per QP; zero: 16
	Start    clock.Time
	Stop     clock.Time // no message is posted after it; 0: never
	DSCP     uint8      // traffic class of the QPs' frames (DSCP<<2 on the wire)
	Priority int        // >= 0: must agree with the NIC's dscp2prio of DSCP; -1: derived
	MTU      int        // path MTU bytes (256..4096); zero: 4096 capped by the ports
	SL       uint8      // IB: the QPs' service level (their VL through the NIC's SL2VL)
}

// rdmaFlow is one RDMA flow: its connections and streams.
type rdmaFlow struct {
	s        *Sim
	id       int
	cfg      RDMAFlowConfig
	src, dst *nicHost
	prio     uint8
	qps      []rdmaQP
	lastRx   uint64 // data bytes at the previous sample
}

// rdmaQP is one connection of a flow.
type rdmaQP struct {
	src, dst *nic.Endpoint
	st       *nic.Stream
}

// maxRDMAMessage bounds a message (and so each side's memory region).
const maxRDMAMessage = 1 << 30

// AddRDMAFlow adds an RDMA flow between two NIC hosts.
func (s *Sim) AddRDMAFlow(cfg RDMAFlowConfig) error {
	if s.started {
		return fmt.Errorf("sim: flow %q added after start", cfg.Name)
	}
	src, dst := s.nicHost(cfg.Src), s.nicHost(cfg.Dst)
	switch {
	case src == nil:
		return fmt.Errorf("sim: flow %q: source %q is not a NIC host", cfg.Name, cfg.Src)
	case dst == nil:
		return fmt.Errorf("sim: flow %q: destination %q is not a NIC host", cfg.Name, cfg.Dst)
	case src == dst:
		return fmt.Errorf("sim: flow %q: source and destination are the same host", cfg.Name)
	case cfg.Op > OpSend:
		return fmt.Errorf("sim: flow %q: unknown operation %d", cfg.Name, cfg.Op)
	case cfg.Size <= 0 || cfg.Size > maxRDMAMessage:
		return fmt.Errorf("sim: flow %q: message size %d not in 1..%d", cfg.Name, cfg.Size, maxRDMAMessage)
	case cfg.Count < 0 || cfg.QPs < 0 || cfg.Depth < 0 || cfg.Start < 0 || cfg.Stop < 0:
		return fmt.Errorf("sim: flow %q: negative count, qps, depth, start or stop", cfg.Name)
	case cfg.Count == 0 && cfg.Stop == 0:
		return fmt.Errorf("sim: flow %q: neither a count nor a stop time", cfg.Name)
	case cfg.DSCP > 63:
		return fmt.Errorf("sim: flow %q: DSCP %d out of range 0..63", cfg.Name, cfg.DSCP)
	case cfg.Priority > 7:
		return fmt.Errorf("sim: flow %q: priority %d out of range 0..7 (or -1)", cfg.Name, cfg.Priority)
	case cfg.MTU != 0 && (cfg.MTU < 256 || cfg.MTU > 4096 || cfg.MTU&(cfg.MTU-1) != 0):
		return fmt.Errorf("sim: flow %q: path MTU %d: want 256, 512, 1024, 2048 or 4096", cfg.Name, cfg.MTU)
	}
	if cfg.QPs == 0 {
		cfg.QPs = 1
	}
	if cfg.Depth == 0 {
		cfg.Depth = 16
	}
	f := &rdmaFlow{s: s, id: len(s.rdma), cfg: cfg, src: src, dst: dst, prio: src.dscpToPrio(cfg.DSCP)}
	if src.ib() != dst.ib() {
		return fmt.Errorf("sim: flow %q: %s and %s are not on the same fabric", cfg.Name, cfg.Src, cfg.Dst)
	}
	if src.ib() {
		if cfg.SL > 15 {
			return fmt.Errorf("sim: flow %q: sl %d out of 0..15", cfg.Name, cfg.SL)
		}
		f.prio = src.slToVL(cfg.SL)
	}
	if cfg.Priority >= 0 && uint8(cfg.Priority) != f.prio {
		return fmt.Errorf("sim: flow %q: priority %d, but NIC %s classifies DSCP %d to priority %d (set its dscp2prio)",
			cfg.Name, cfg.Priority, cfg.Src, cfg.DSCP, f.prio)
	}
	s.rdma = append(s.rdma, f)
	if !src.ib() {
		s.prios |= 1 << f.prio // IB: the switches' VLs, ibVLs
	}
	return nil
}

// start connects the flow's QPs and arms their streams (at Start, once the
// NICs exist). On a fabric an SM manages, it waits until both ports are
// Active: only then do the LIDs the QPs address exist.
func (f *rdmaFlow) start() error {
	if f.src.managed {
		f.src.n.OnPortActive(func() {
			f.dst.n.OnPortActive(func() {
				if err := f.connect(); err != nil {
					f.s.fail(err)
				}
			})
		})
		return nil
	}
	return f.connect()
}

func (f *rdmaFlow) connect() error {
	c := &f.cfg
	var mtu nic.MTU
	if c.MTU > 0 {
		mtu, _ = nic.MTUFor(c.MTU)
	}
	for i := 0; i < c.QPs; i++ {
		ea, eb, err := nic.Connect(f.src.n, f.dst.n, nic.ConnectOpts{
			TrafficClass: c.DSCP << 2, SL: c.SL, MTU: mtu, BufSize: c.Size,
			SendWR: max(c.Depth, 16), RecvWR: max(c.Depth, 16),
			// Distinct initial PSNs per connection, deterministic.
			PSN: uint32(f.id*7919+i*104729) & 0xFFFFFF,
		})
		if err != nil {
			return fmt.Errorf("sim: flow %q: %w", c.Name, err)
		}
		st, err := nic.NewStream(ea, eb, nic.StreamConfig{Op: c.Op.verb(), Size: c.Size, Count: c.Count,
			Depth: c.Depth, Start: c.Start, Stop: c.Stop})
		if err != nil {
			return fmt.Errorf("sim: flow %q: %w", c.Name, err)
		}
		f.qps = append(f.qps, rdmaQP{src: ea, dst: eb, st: st})
	}
	return nil
}

// rxBytes is the flow's payload accepted at the data receiver so far:
// that of request frames at the destination's QPs (WRITE, SEND) or of
// response frames at the source's (READ). Payload, not frame bytes, as a
// raw flow's received bytes are: flow_rates.csv has both in one column.
func (f *rdmaFlow) rxBytes() uint64 {
	var n uint64
	for _, q := range f.qps {
		if f.cfg.Op == OpRead {
			n += q.src.QP.Stats.RxPayloadBytes
		} else {
			n += q.dst.QP.Stats.RxPayloadBytes
		}
	}
	return n
}

// done reports whether every stream finished (count reached, or stopped
// and drained, or failed).
func (f *rdmaFlow) done() bool {
	for _, q := range f.qps {
		if !q.st.Stats().Done {
			return false
		}
	}
	return true
}

// rdmaStopped: every RDMA flow is done or past its stop time (deadlock
// detection).
func (s *Sim) rdmaStopped() bool {
	for _, f := range s.rdma {
		if !f.done() && !(f.cfg.Stop > 0 && s.now >= f.cfg.Stop) {
			return false
		}
	}
	return true
}
