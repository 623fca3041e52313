// Package switchcore is the emulated switch: ports with eight priorities,
// SONiC-style ingress buffer accounting with PFC, ECN marking by WRED
// profile, strict and DWRR scheduling, L2/L3 forwarding with ECMP,
// cut-through or store-and-forward timing, a PFC watchdog, and a native
// InfiniBand mode with per-VL credits, VL arbitration and congestion
// control marking (FECN, IBA Annex A10; ibcc.go).
//
// It is I/O-free and clock-injected: it reads time only from a clock.Clock,
// arms only clock.Timers, and hands frames to a PortTx. The simulator drives
// it in virtual time; the real-time daemon drives the same code on the wall
// clock. A Switch is not safe for concurrent use: one goroutine (or the one
// simulator) calls it.
//
// Public API (this file holds the types; methods live next to their code):
//
//	func DefaultConfig(name string, ports int, speed uint64) *Config
//	func DefaultDSCPToTC() [64]uint8 / AzureDSCPToTC() [64]uint8
//	func LosslessHeadroom(speed uint64, cableMeters, mtu int) int
//	func HeadroomForDelay(speed uint64, prop clock.Time, mtu int) int
//	func New(cfg *Config, clk clock.Clock, pool *frame.Pool) (*Switch, error)
//	func (s *Switch) Attach(port int, tx PortTx)
//	func (s *Switch) Receive(port int, f *frame.Frame)          // at f.HeadAt; takes ownership
//	func (s *Switch) HeadBytes() int                            // cut-through header bytes, 0 = whole frame
//	func (s *Switch) SetPortUp(port int, up bool)
//	func (s *Switch) StartPortDown(port int)                    // down, no link_down event counted
//	func (s *Switch) Learn(port int, src wire.MAC)              // a sender seen outside the engine
//	func (s *Switch) CountFlooded(port int, tx bool, b []byte)  // a frame the owner flooded, in the port and priority counters
//	func (s *Switch) Ports() int
//	func (s *Switch) Name() string
//	func (s *Switch) PortIndex(name string) int
//	func (s *Switch) PortSpeed(port int) uint64
//	func (s *Switch) Lookup(addr netip.Addr) (netip.Prefix, []int, bool) // L3 LPM result
//	func (s *Switch) Counters(port int) *PortCounters
//	func (s *Switch) QueueDepth(port, prio int) int             // bytes queued at egress
//	func (s *Switch) PGOccupancy(port, pg int) (shared, headroom int)
//	func (s *Switch) Paused(port, prio int) bool                // egress paused by received PFC
//	func (s *Switch) XoffSent(port, prio int) bool              // we assert XOFF to the peer
//	func (s *Switch) Stormed(port, prio int) bool               // PFC watchdog storm state
//	func (s *Switch) Credits(port, vl int) (avail int, ok bool) // IB: credits we may still send
//	func (s *Switch) RxFreeBlocks(port, vl int) int              // IB: our free receive blocks
//	func (s *Switch) ResetIBFlowControl(port int)               // IB: a new peer: counters from 0
//	func (c *PortCounters) Each(fn func(name string, v uint64))  // ethtool -S style names
//	func (c *PortCounters) TotalDrops() uint64
//	func (s *Switch) SetTrace(fn func(ev TraceEvent))
//
// Frame ownership: Receive takes the frame; the switch either hands it to a
// PortTx (Transmit takes it) or returns it to its pool after counting a drop.
// Frames the switch makes itself (PFC, IB flow-control packets) come from
// the pool given to New.
package switchcore

import (
	"net/netip"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// NumPriorities is the number of 802.1p priorities, traffic classes,
// priority groups and egress queues per port (SONiC, 802.1Qbb).
const NumPriorities = 8

// PortTx is the transmit side of a port, implemented by the driver (a sim
// link end, a real-time socket). Transmit is called at the frame's start time
// with f.TailAt set to the time its last bit leaves; it takes ownership.
type PortTx interface {
	Transmit(f *frame.Frame)
}

// Fabric selects the switch's link layer.
type Fabric uint8

const (
	// FabricEthernet carries Ethernet frames (RoCEv2, PFC).
	FabricEthernet Fabric = iota
	// FabricIB carries native InfiniBand packets (LRH ... VCRC) and link
	// (flow-control) packets.
	FabricIB
)

// Trust selects which header field classifies a frame (PORT_QOS_MAP trust,
// mlnx_qos --trust).
type Trust uint8

const (
	// TrustDSCP classifies by the IP DSCP through DSCP_TO_TC_MAP; non-IP
	// frames fall back to the 802.1p PCP when tagged, TC 0 otherwise.
	TrustDSCP Trust = iota
	// TrustPCP classifies by the 802.1Q PCP through DOT1P_TO_TC_MAP;
	// untagged frames go to TC 0.
	TrustPCP
)

// PoolMode is BUFFER_POOL mode.
type PoolMode uint8

const (
	PoolDynamic PoolMode = iota // thresholds from BUFFER_PROFILE dynamic_th
	PoolStatic                  // thresholds from BUFFER_PROFILE static_th (bytes)
)

// PoolType is BUFFER_POOL type.
type PoolType uint8

const (
	PoolIngress PoolType = iota
	PoolEgress
)

// BufferPool is one SONiC BUFFER_POOL entry.
type BufferPool struct {
	// Size is the shared part of the pool in bytes. Reserved bytes
	// (BUFFER_PROFILE size) and private headroom are outside it, as in
	// SONiC's traditional buffer model where the pool size is what is left
	// after reservations.
	Size int
	Type PoolType
	Mode PoolMode
	// Xoff is the shared headroom pool size in bytes (ingress lossless pool
	// only). 0 means every lossless PG has private headroom of its
	// profile's xoff; >0 means lossless PGs draw headroom from this shared
	// pool (each still bounded by its own xoff).
	Xoff int
}

// BufferProfile is one SONiC BUFFER_PROFILE entry.
type BufferProfile struct {
	Pool string // BUFFER_POOL name
	// Size is the reserved (guaranteed) bytes of the PG or queue, used
	// before the shared pool.
	Size int
	// DynamicTh is the dynamic threshold exponent: the PG/queue may hold
	// alpha * (free shared pool) bytes of shared buffer, alpha = 2^DynamicTh.
	// Range [-8, 7]; -8 means alpha 0 and 7 means unlimited (SONiC).
	// Used when the pool mode is dynamic.
	DynamicTh int
	// StaticTh is the shared-buffer limit in bytes when the pool is static.
	StaticTh int
	// Lossless only (a PG is lossless when its profile has Xoff > 0 and its
	// priority is in pfc_enable):
	Xon       int // resume when shared usage <= max(Xon, limit-XonOffset)
	Xoff      int // headroom bytes absorbed after XOFF
	XonOffset int
}

// Lossless reports whether the profile carries headroom.
func (p *BufferProfile) Lossless() bool { return p != nil && p.Xoff > 0 }

// ECNMode is WRED_PROFILE ecn.
type ECNMode uint8

const (
	ECNNone  ECNMode = iota // ecn_none: WRED drops only
	ECNGreen                // ecn_green: mark green (all our traffic is green)
	ECNAll                  // ecn_all
)

// WREDProfile is one SONiC WRED_PROFILE entry. Only the green colour is
// modelled: the emulator does not colour traffic (no policers), so every
// packet is green, as on a switch without a policer.
type WREDProfile struct {
	ECN                  ECNMode
	WREDGreenEnable      bool // drop non-ECT packets of LOSSY queues by WRED
	GreenMinThreshold    int  // bytes
	GreenMaxThreshold    int  // bytes
	GreenDropProbability int  // percent at GreenMaxThreshold
}

// SchedulerType is SCHEDULER type.
type SchedulerType uint8

const (
	SchedDWRR SchedulerType = iota // also accepts WRR: same deficit scheduler
	SchedStrict
)

// Scheduler is one SONiC SCHEDULER entry.
type Scheduler struct {
	Type   SchedulerType
	Weight int // DWRR weight; quantum = Weight * port MTU bytes
}

// ECNMarkPoint is where WRED/ECN is evaluated.
type ECNMarkPoint uint8

const (
	MarkAtDequeue ECNMarkPoint = iota // default, like the HPCC/DCQCN models and most ASICs
	MarkAtEnqueue
)

// PFCWDAction is PFC_WD action.
type PFCWDAction uint8

const (
	PFCWDDrop PFCWDAction = iota
	PFCWDForward
	PFCWDAlert
)

// PFCWatchdog is PFC_WD (per port settings applied to every port) plus
// PFC_WD|GLOBAL POLL_INTERVAL.
type PFCWatchdog struct {
	Enabled         bool
	DetectionTime   clock.Time // default 200 ms
	RestorationTime clock.Time // default 200 ms
	Action          PFCWDAction
	PollInterval    clock.Time // default 200 ms
}

// PortConfig describes one switch port.
type PortConfig struct {
	Name  string
	Speed uint64 // bits per second
	MTU   int    // largest L2 payload (IP packet) in bytes; IB: largest packet LRH..VCRC
	// MAC is the port's source MAC for PFC frames. Zero: derived from the
	// switch name and port index (locally administered).
	MAC wire.MAC
	// PFCEnable is PORT_QOS_MAP pfc_enable as a bit mask (bit p = priority p).
	PFCEnable uint8
	// BufferPG binds each ingress PG to a BUFFER_PROFILE name (BUFFER_PG);
	// "" means no buffer: frames of that PG are dropped (lossy_threshold).
	BufferPG [NumPriorities]string
	// BufferQueue binds each egress queue to a BUFFER_PROFILE (BUFFER_QUEUE);
	// "" means the queue is limited only by its ingress admission.
	BufferQueue [NumPriorities]string
	// Scheduler binds each queue to a SCHEDULER name (QUEUE|port|q scheduler).
	Scheduler [NumPriorities]string
	// WRED binds each queue to a WRED_PROFILE name; "" = no ECN/WRED.
	WRED [NumPriorities]string
}

// L2Entry is a static FDB entry.
type L2Entry struct {
	MAC  wire.MAC
	Port int
}

// Route is an L3 route: a prefix and its ECMP next-hop ports.
type Route struct {
	Prefix netip.Prefix
	Ports  []int
}

// VLArbEntry is one VL arbitration table entry: a VL and its weight in
// 64-byte units (IBA VLArbitrationTable).
type VLArbEntry struct {
	VL     uint8
	Weight uint8
}

// IBConfig configures native IB mode (Config.Fabric == FabricIB).
type IBConfig struct {
	// LFT is the linear forwarding table: LFT[DLID] = output port, or
	// -1/absent (index out of range) for "no route".
	LFT []int
	// SL2VL maps the packet's SL to the output VL (one table for all port
	// pairs). VL 15 means drop (IBA).
	SL2VL [16]uint8
	// DataVLs is the number of data VLs (1..8): VL0..DataVLs-1.
	DataVLs int
	// VLArbHigh / VLArbLow are the arbitration tables; HighLimit is
	// VLHighLimit in 4 KB units (255 = unlimited).
	VLArbHigh []VLArbEntry
	VLArbLow  []VLArbEntry
	HighLimit int
	// BufferBlocks is the receive buffer per data VL per port, in 64-byte
	// credits (at most 2048: the credit window).
	BufferBlocks int
	// CreditUpdateInterval is the period of unsolicited flow-control
	// packets per VL (they are also sent on buffer release).
	CreditUpdateInterval clock.Time
	// CreditUpdateMin is the least time between two flow-control packets
	// of a VL (the Mellanox model's credMinTime; the HCA's is 1 us):
	// buffer released within it is granted by the next one. 0 sends one
	// per release. The real-time switch sets it: there every packet is a
	// record through a ring and a wake-up of the peer's process.
	CreditUpdateMin clock.Time
	// CC is congestion control (IBA Annex A10): FECN marking (ibcc.go).
	CC IBCCConfig
}

// Config is one switch's configuration, with SONiC vocabulary. DefaultConfig
// fills every field; a lab file overrides what it names.
type Config struct {
	Name   string
	Fabric Fabric
	Ports  []PortConfig

	Trust Trust
	// Maps (SONiC DSCP_TO_TC_MAP, DOT1P_TO_TC_MAP, TC_TO_PRIORITY_GROUP_MAP,
	// TC_TO_QUEUE_MAP, MAP_PFC_PRIORITY_TO_QUEUE). The PFC priority of a
	// frame is its TC.
	DSCPToTC           [64]uint8
	Dot1pToTC          [8]uint8
	TCToPG             [NumPriorities]uint8
	TCToQueue          [NumPriorities]uint8
	PFCPriorityToQueue [NumPriorities]uint8

	BufferPools    map[string]*BufferPool
	BufferProfiles map[string]*BufferProfile
	WREDProfiles   map[string]*WREDProfile
	Schedulers     map[string]*Scheduler
	ECNMarkAt      ECNMarkPoint

	// Forwarding: static FDB first, then L3 routes (LPM, ECMP), then learned
	// FDB entries; otherwise the frame is dropped (no_route). Unknown
	// unicast is never flooded: flooding lossless traffic is a known cause of
	// PFC deadlocks (Guo et al., SIGCOMM'16).
	L2          []L2Entry
	MACLearning bool
	Routes      []Route
	// DecrementTTL makes L3-forwarded IPv4/IPv6 packets lose one TTL/hop
	// limit (IPv4 checksum updated incrementally); TTL 0 or 1 on arrival
	// => drop (ttl_expired). MAC addresses are not rewritten.
	DecrementTTL bool
	ECMPSeed     uint64

	// CutThrough: start egress after HeadBytesCT bytes when the egress port
	// is idle and not slower. Otherwise store-and-forward.
	CutThrough  bool
	HeadBytesCT int // default 64

	// PFCQuanta is the pause time sent in XOFF frames (default 0xFFFF);
	// the XOFF is refreshed every PFCRefresh (default: half of PFCQuanta at
	// the port speed).
	PFCQuanta  uint16
	PFCRefresh clock.Time

	PFCWD PFCWatchdog

	// Seed drives WRED decisions (PCG), so a run is repeatable.
	Seed uint64

	IB IBConfig
}

// DropReason is why a frame was dropped. Every drop has exactly one.
type DropReason uint8

const (
	DropNone             DropReason = iota
	DropMalformed                   // undecodable frame (or bad IB VCRC/LRH)
	DropLossyThreshold              // lossy PG over its shared threshold / pool full
	DropHeadroomOverflow            // never a drop: counts lossless frames admitted beyond headroom (config error)
	DropNoRoute                     // no FDB entry, no route, LFT miss, or hairpin to the ingress port
	DropLinkDown                    // egress or ingress port down
	DropPFCWD                       // PFC watchdog drop action
	DropMTUExceeded                 // payload larger than the egress MTU
	DropWRED                        // WRED drop of a non-ECT lossy packet
	DropEgressThreshold             // lossy egress queue over its BUFFER_QUEUE threshold
	DropTTLExpired                  // L3 TTL/hop limit exhausted
	DropVL15                        // IB: SL2VL mapped the packet to VL15 (drop by spec)
	DropFCSError                    // a link corrupted the frame (f.Corrupt): a store-and-forward switch drops it at the FCS check; a cut-through switch has already started it and forwards it
	NumDropReasons
)

var dropNames = [NumDropReasons]string{
	"none", "malformed", "lossy_threshold", "headroom_overflow", "no_route", "link_down",
	"pfcwd_drop", "mtu_exceeded", "wred_drop", "egress_threshold", "ttl_expired", "vl15_drop", "fcs_error",
}

func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropNames[r]
	}
	return "drop_reason_unknown"
}

// PrioCounters are the per-priority (and per PG / queue of the same index)
// counters of one port. Names in comments are what Each reports.
type PrioCounters struct {
	RxPackets, RxBytes uint64 // rx_prioN_packets, rx_prioN_bytes
	TxPackets, TxBytes uint64 // tx_prioN_packets, tx_prioN_bytes
	RxPause            uint64 // rx_prioN_pause: PFC frames received with this priority enabled, time > 0
	RxPauseTransition  uint64 // rx_prioN_pause_transition: XOFF->XON transitions
	RxPauseDurationPs  int64  // rx_prioN_pause_duration (reported in microseconds)
	TxPause            uint64 // tx_prioN_pause: PFC frames sent with this priority XOFF
	TxPauseDurationPs  int64  // tx_prioN_pause_duration (microseconds)
	ECNMarked          uint64 // tx_prioN_ecn_marked: CE-marked by this egress queue (SONiC WRED_ECN_MARKED per queue; not mlx5's rx_prioN_marked, which counts marked frames received)
	// PG (index = PG) and queue (index = queue) watermarks in bytes.
	PGSharedWatermark   int    // pg_shared_watermark
	PGHeadroomWatermark int    // pg_headroom_watermark
	QueueWatermark      int    // queue_watermark
	HeadroomOverflow    uint64 // pg_headroom_overflow: lossless frames beyond xoff (config error)
	Drops               [NumDropReasons]uint64
	// PFC watchdog (SONiC "show pfcwd stats" columns).
	PFCWDStormDetected uint64 // STORM DETECTED
	PFCWDStormRestored uint64 // STORM RESTORED
	PFCWDTxOK          uint64 // TX OK/DROP: frames of a stormed queue
	PFCWDTxDrop        uint64
	PFCWDRxOK          uint64 // RX OK/DROP: frames arriving on a stormed priority
	PFCWDRxDrop        uint64
	// IB (index = VL).
	XmitWaitPs   int64  // vlN_xmit_wait (reported in mad.XmitWaitTick): time with data queued and no credit
	CreditStalls uint64 // times a VL had a packet and no credit
	FCTx, FCRx   uint64 // flow-control packets sent / received for this VL
	FECNMarked   uint64 // packets this VL sent with FECN newly set (IB CC)
}

// PortCounters are one port's counters.
type PortCounters struct {
	RxPacketsPhy, RxBytesPhy uint64 // rx_packets_phy, rx_bytes_phy (all frames incl. control)
	TxPacketsPhy, TxBytesPhy uint64
	RxPauseCtrlPhy           uint64 // MAC control frames received (PFC + PAUSE)
	TxPauseCtrlPhy           uint64 // PFC frames sent
	LinkStateRx, LinkStateTx uint64 // link-state advertisements received, sent (linkstate.go)
	LinkStateRefused         uint64 // advertisements refused: not from a switch of the fabric, or on a port to a host
	LinkStateMismatch        uint64 // advertisements whose topology digest differs from this switch's (another lab file)
	RxGlobalPause            uint64 // 802.3x PAUSE received with time > 0
	RxGlobalPauseDurationPs  int64
	LinkDownEvents           uint64                 // link_down_events_phy
	Drops                    [NumDropReasons]uint64 // all priorities, plus drops before classification
	Prio                     [NumPriorities]PrioCounters
	PortXmitWaitPs           int64 // IB port_xmit_wait, whole port (reported in mad.XmitWaitTick)
	// IB PortCounters (IBA 16.1.3.5): packets and octets of IB packets,
	// link packets excluded (they are counted per VL, FCTx and FCRx),
	// octets from the LRH through the ICRC (not the VCRC). The _phy
	// counters above count every packet on the wire.
	XmitPkts, RcvPkts uint64 // port_xmit_packets, port_rcv_packets
	XmitData, RcvData uint64 // octets; port_xmit_data, port_rcv_data report them ÷4
	// IBA 16.1.3.5's discards, each at the port the spec names (the drop
	// reasons count a packet where the engine dropped it, which for an
	// oversized packet is its ingress): PortXmitDiscards at the output
	// port (not Active, or the packet longer than its MTU),
	// PortRcvSwitchRelayErrors at the input port (no LFT entry, output
	// port = input port, SL to VL15).
	XmitDiscards, RcvSwitchRelayErrors uint64 // port_xmit_discards, port_rcv_switch_relay_errors
}

// TraceKind is the kind of a TraceEvent.
type TraceKind uint8

const (
	TraceXoff             TraceKind = iota + 1 // we sent XOFF for Prio on Port
	TraceXon                                   // we sent XON
	TracePauseRx                               // received PFC paused Prio on Port (Quanta)
	TraceResumeRx                              // received XON
	TraceECNMark                               // CE-marked a frame in queue Prio
	TraceDrop                                  // dropped a frame (Reason)
	TraceHeadroomOverflow                      // lossless frame admitted beyond xoff: configuration error
	TracePFCWDStorm                            // watchdog detected a storm on (Port, Prio)
	TracePFCWDRestore                          // watchdog restored (Port, Prio)
	TraceCreditStall                           // IB: VL Prio on Port has data and no credit
	TraceFECNMark                              // IB CC: set FECN in a frame sent on VL Prio (Bytes = queue depth)
	TraceXoffRefresh                           // we re-sent XOFF for the priorities still asserted on Port (Frame: the PFC frame)
)

var traceNames = [...]string{"", "xoff", "xon", "pause_rx", "resume_rx", "ecn_mark", "drop",
	"headroom_overflow", "pfcwd_storm", "pfcwd_restore", "credit_stall", "fecn_mark", "xoff_refresh"}

func (k TraceKind) String() string {
	if int(k) < len(traceNames) {
		return traceNames[k]
	}
	return "trace_unknown"
}

// TraceEvent is one notable decision, for notes, CSV and pcapng comments.
// It is passed by value; the hook must not retain Frame.
type TraceEvent struct {
	At     clock.Time
	Switch string
	Kind   TraceKind
	Port   int
	Prio   int // priority / PG / queue / VL as the kind implies
	Reason DropReason
	Bytes  int    // frame length, or occupancy for xoff/xon
	Quanta uint16 // pause quanta for TracePauseRx
	Frame  *frame.Frame
}
