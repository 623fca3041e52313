// Package sim is the deterministic discrete-event driver of the emulator.
//
// It owns a virtual clock (picoseconds, clock.Time) implementing clock.Clock,
// in-memory full-duplex links with exact serialization, propagation and
// cut-through timing, simulated hosts that send and sink real RoCEv2 (or
// native InfiniBand) frames, hosts whose port is a real RDMA NIC (package
// nic: verbs, RC transport, DCQCN) running streams of RDMA operations, and
// a scenario runner that turns a lab spec into switches (switchcore),
// hosts, links and flows and collects results.
//
// Everything runs on one goroutine. For a given seed a run is bit-for-bit
// repeatable: timers that fire at the same picosecond fire in the order they
// were armed, and every random decision (loss, corruption, message sizes,
// destinations, arrival times) draws from one seeded PCG generator.
//
// Public API (this file holds the configuration types; methods live next
// to their code, results in results.go):
//
//	func New(opt Options) *Sim
//	func (s *Sim) Now() clock.Time                         // clock.Clock
//	func (s *Sim) NewTimer(f func()) clock.Timer           // clock.Clock; re-armable, zero-alloc Reset/Stop
//	func (s *Sim) At(at clock.Time, f func())              // one-shot helper (allocates a timer)
//	func (s *Sim) Rand() *rand.Rand                        // the run's seeded PCG generator
//	func (s *Sim) Pool() *frame.Pool                       // the run's frame pool
//	func (s *Sim) RunUntil(t clock.Time) error             // low-level: fire events up to t (budget-bounded)
//	func (s *Sim) Events() uint64                          // events fired so far
//	func (s *Sim) SetTap(fn func(l *Link, dir int, f *frame.Frame)) // every delivered frame (captures)
//
//	func (s *Sim) AddSwitch(name string, cfg *switchcore.Config) error
//	func (s *Sim) AddHost(cfg HostConfig) error
//	func (s *Sim) Connect(a, b PortRef, cfg LinkConfig) (*Link, error)
//	func (s *Sim) AddFlow(cfg FlowConfig) error
//	func (s *Sim) AddNIC(cfg NICConfig) error               // a host with a real RDMA NIC (package nic), nichost.go
//	func (s *Sim) AddRDMAFlow(cfg RDMAFlowConfig) error     // perftest-like verbs stream between NIC hosts, rdma.go
//	func (s *Sim) NIC(name string) *nic.NIC                 // after Start
//	func Incast(name string, srcs []string, dst string, base FlowConfig) []FlowConfig
//	func (s *Sim) Start() error                            // create switches, install routes (Run calls it)
//	func (s *Sim) Switch(name string) *switchcore.Switch   // after Start
//	func (s *Sim) Host(name string) *Host
//	func (s *Sim) Links() []*Link
//	func (s *Sim) Run(progress func(now, end clock.Time)) (*Results, error)
//
//	func Build(spec *lab.Spec, seed uint64) (*Sim, error)  // lab file -> Sim (build.go)
//	func SwitchConfig(spec *lab.Spec, n *lab.Node, seed uint64) (*switchcore.Config, error)
//
// Timing model (shared with switchcore): a transmitter calls Transmit at
// the frame's start time with f.TailAt = its tail time; the link delivers
// it to the peer at start + delay + ser(min(len, peer.HeadBytes)) with
// f.HeadAt = that time and f.TailAt = sender tail + delay. Hosts and
// store-and-forward switches take whole frames (HeadAt == TailAt), so a
// cut-through hop saves exactly ser(len) - ser(HeadBytes).
package sim

import (
	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/clock"
)

// Options configure one run.
type Options struct {
	Seed uint64
	// Duration is the end time of Run: a run always stops there, whatever
	// is still queued. Zero means 10 ms.
	Duration clock.Time
	// SampleInterval is the time-series period; zero disables sampling.
	SampleInterval clock.Time
	// EventBudget bounds the events one Run may fire (a CPU bound that does
	// not depend on the wall clock); zero means 1<<40. Exceeding it ends the
	// run with ErrEventBudget and partial results.
	EventBudget uint64
	// DeadlockWindow: after every source has stopped, if switch queues hold
	// bytes and no data frame was delivered on any link for this long, the
	// run reports a deadlock. Zero means 100 µs.
	DeadlockWindow clock.Time
	// SeriesPriorities restricts the sampled queue/pause series to these
	// priorities; nil means the priorities the flows use.
	SeriesPriorities []int
}

// PortRef names one port of a node: a switch port index or a host's only
// port (0).
type PortRef struct {
	Node string
	Port int
}

// LinkEvent takes a link down or up at a given time.
type LinkEvent struct {
	At clock.Time
	Up bool
}

// LinkConfig describes one full-duplex link; both directions share it.
type LinkConfig struct {
	Rate  uint64     // bits per second; both ends run at this rate
	Delay clock.Time // propagation delay, one way
	// MTU is the largest L3 packet (Ethernet payload, as Linux's MTU) a
	// frame may carry; larger frames are dropped and counted. For native
	// IB links it is the largest payload (256..4096). Zero: no check.
	MTU     int
	Loss    float64 // probability a frame is lost in flight
	Corrupt float64 // probability a frame's payload byte is flipped (CRC then fails)
	Events  []LinkEvent
}

// Fabric selects a host's link layer.
type Fabric uint8

const (
	FabricRoCE Fabric = iota // Ethernet / IPv4 / UDP 4791 / BTH / ICRC
	FabricIB                 // LRH / BTH / ICRC / VCRC, per-VL credits
)

// PFCStorm makes a host emit XOFF for Priority every Interval between Start
// and Stop (a NIC bug, Guo et al. SIGCOMM'16), regardless of its buffer.
type PFCStorm struct {
	Priority    int
	Start, Stop clock.Time
	Interval    clock.Time // zero: half the pause quanta (wire.XoffRefresh): the peer stays paused
}

// HostConfig describes one simulated host (a traffic endpoint until the NIC
// package replaces it).
type HostConfig struct {
	Name   string
	Fabric Fabric
	MAC    [6]byte // zero: derived from the host index
	IP     [4]byte // zero: 10.0.<idx/256>.<idx%256+1>
	LID    uint16  // IB only; zero: host index + 1
	// DSCPToPrio classifies a flow's DSCP to its 802.1p priority (mlnx_qos
	// dscp2prio). Nil: DSCP>>3 (so DSCP 26 -> priority 3).
	DSCPToPrio *[64]uint8
	// Tagged sends 802.1Q-tagged frames with PCP = priority (trust pcp).
	Tagged bool
	VID    uint16
	// IgnorePFC disables pause honouring (a misbehaving NIC).
	IgnorePFC bool
	// IB: receive buffer per VL in 64-byte blocks advertised to the peer;
	// zero means 1024 blocks (64 KiB).
	IBBlocksPerVL int
	IBDataVLs     int // data VLs; zero means 1 (VL0)
	// IBSL2VL maps a flow's SL to its VL; nil: VL = SL % IBDataVLs.
	IBSL2VL *[16]uint8
	// IBCC turns on InfiniBand congestion control (IBA Annex A10) at this
	// host: it answers FECN with CN packets and paces its flows by the
	// CCT (ibcc.go). nil: off.
	IBCC  *cc.IBCC
	Storm *PFCStorm
}

// FlowKind is the transport of a flow's frames.
type FlowKind uint8

const (
	RDMAWrite FlowKind = iota // RC RDMA WRITE FIRST/MIDDLE/LAST or ONLY (RETH on first/only), real PSNs
	UDSend                    // UD SEND ONLY with DETH, one packet per message fragment
)

// Pattern is when a flow offers messages.
type Pattern uint8

const (
	Constant Pattern = iota // messages back to back at Rate from Start
	OnOff                   // Constant during On, silent during Off, repeating
	Poisson                 // message arrivals exponential, mean offered load = Load * Rate
)

// DistKind is a message size distribution.
type DistKind uint8

const (
	Fixed       DistKind = iota // Bytes
	Uniform                     // Min..Max
	Exponential                 // mean Bytes, clamped to [Min, Max] when set
	Empirical                   // CDF
)

// CDFPoint is one point of an empirical size CDF: P(size <= Bytes) = P.
type CDFPoint struct {
	Bytes int
	P     float64
}

// SizeDist is a message size distribution.
type SizeDist struct {
	Kind     DistKind
	Bytes    int // Fixed size / Exponential mean
	Min, Max int
	CDF      []CDFPoint // increasing Bytes and P, last P == 1
}

// FlowConfig is one traffic source. A flow with several Dst picks each
// message's destination uniformly (seeded): with Poisson that is an
// all-to-all background load.
type FlowConfig struct {
	Name    string
	Src     string
	Dst     []string
	Kind    FlowKind
	Pattern Pattern
	Rate    uint64 // bits/s on the wire, frame overhead included (wire.Overhead); zero: the source link rate
	Size    SizeDist
	Count   int        // messages; zero: unlimited until Stop
	Start   clock.Time // first message
	Stop    clock.Time // no message starts after it; zero: never
	On, Off clock.Time // OnOff periods
	Load    float64    // Poisson: offered load as a fraction of Rate
	DSCP    uint8
	// Priority overrides the host's DSCP classification when >= 0; set -1
	// (or leave DSCP-derived) to classify by DSCP.
	Priority int
	ECT      bool // mark packets ECT(0)
	PMTU     int  // RDMA path MTU (payload per packet): 256..4096; zero: 1024
	SL       uint8
	// SrcPort is the UDP source port (ECMP entropy); zero: derived from
	// the QPNs as Linux does.
	SrcPort uint16
}

func (f Fabric) String() string {
	if f == FabricIB {
		return "ib"
	}
	return "roce"
}
