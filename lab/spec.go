package lab

// This file holds the parsed form of a lab file. Every value is typed and
// in base units: rates in bits per second, sizes in bytes, times in
// clock.Time picoseconds. Load fills in the documented defaults
// (topology.defaults for links, implied ports, addresses), so a consumer
// never re-parses a string. QoS tables are kept sparse, as written: a
// missing entry means "use the switch's default"
// (switchcore.DefaultConfig), which is where those defaults live.

import (
	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/clock"
)

// Spec is one parsed and validated lab file.
type Spec struct {
	// Name of the lab: [a-zA-Z0-9_-], at most 15 characters, because the
	// namespace lab will name namespaces and bridges after it.
	Name string
	// File is the path the spec was loaded from, for messages.
	File string
	// source is the text it was parsed from: Start writes it to a file
	// for the daemons when File is not one (a spec from Parse).
	source []byte
	// Fabric is roce (Ethernet, PFC, ECN) or ib (native InfiniBand,
	// credits, VL arbitration).
	Fabric Fabric

	// Defaults are topology.defaults, already applied to every link.
	Defaults LinkParams
	// Nodes in file order. Node names are unique.
	Nodes []*Node
	// Links in file order.
	Links []*Link

	// QoS is the top-level qos section as written (nil if absent). Each
	// switch's effective QoS is in Node.QoS.
	QoS *QoS
	// IB is the top-level ib section with defaults applied (fabric ib only).
	IB *IBConfig
	// DCQCN is the top-level dcqcn section: the knobs of every NIC that
	// carries RDMA flows and has no dcqcn of its own (nil: the NIC's
	// default, cc.NVIDIAProfile). See DCQCNOf.
	DCQCN *cc.DCQCN

	// Traffic is the flat list of flows: patterns (incast, pairs,
	// all_to_all) are already expanded into one Flow per (src, dst).
	Traffic []*Flow

	Sim SimParams

	// TimeDilation is time_dilation: N >= 1. A real lab's daemons run the
	// emulated fabric N times slower than the wall clock (rt.Clock), so
	// the built-in RDMA engine emulates link rates N times what the
	// machine moves, and emulab perf reports in the lab's time. 1 is real
	// time; the simulator, whose time is virtual, ignores it.
	TimeDilation int

	// hops caches hop counts towards each NIC (routing.go).
	hops map[*Node][]int

	// Warnings are legal but doubtful settings (headroom below the
	// bandwidth-delay product, a rate above the link rate, ...).
	Warnings []*FieldError
}

// Fabric is the link-layer family of a lab.
type Fabric string

const (
	FabricRoCE Fabric = "roce"
	FabricIB   Fabric = "ib"
)

// NodeKind says what a node is.
type NodeKind string

const (
	// KindNIC is an RDMA host: in the simulator a traffic endpoint, in the
	// namespace lab an emulated RNIC in front of a namespace.
	KindNIC NodeKind = "nic"
	// KindSwitch is an emulated switch (switchcore).
	KindSwitch NodeKind = "switch"
)

// Trust selects which header field classifies a frame to a traffic class.
type Trust string

const (
	TrustDSCP Trust = "dscp"
	TrustPCP  Trust = "pcp"
)

// Node is a host or a switch.
type Node struct {
	Name string
	Kind NodeKind
	// Index is the node's position in Spec.Nodes.
	Index int
	// Ports in port-number order: Ports[i].Index == i. For switches these
	// are the declared ports (`ports:`), or, when none are declared, the
	// ports the links name, in natural order (p1, p2, ..., p10). For NICs
	// the interfaces the links name (eth0 if the NIC has one link).
	Ports []*Port

	// Addressing. Load assigns defaults: MAC 02:00:00:00:NN:NN and IPv4
	// 10.0.<hi>.<lo> from the node's index, LID index+1. Switches get a MAC
	// and a LID (IB switch port 0) but no IPv4.
	MAC  [6]byte
	IPv4 [4]byte
	LID  uint16

	// Switch settings (zero for NICs).
	CutThrough  bool // default true
	HeaderBytes int  // cut-through header bytes, default 64
	Trust       Trust
	ECMPSeed    uint64 // per-switch ECMP hash seed, default the node index
	// Routes are explicit forwarding entries; destinations not covered are
	// routed on shortest paths (ECMP over equal-cost ports): see NextHops.
	Routes []Route
	// QoS is this switch's effective QoS: the top-level qos section with
	// the switch's own qos tables replacing whole tables. Nil when neither
	// exists (switch defaults).
	QoS *QoS
	// IB overrides the global ib section for this node (nil: use Spec.IB).
	IB *IBConfig

	// ECNMarkAt is where the switch's WRED/ECN looks at the queue.
	ECNMarkAt MarkPoint
	// PFCQuanta is the pause time of the XOFF frames the switch sends
	// (0: the switch default, 0xFFFF); PFCRefresh how often an asserted
	// XOFF is re-sent (0: the switch default, half the quanta).
	PFCQuanta  uint16
	PFCRefresh clock.Time
	// MACLearning enables learned FDB entries next to the routes (default
	// true, as on the switch).
	MACLearning bool

	// NIC settings (zero for switches).
	// Tagged sends 802.1Q frames with PCP = priority in VLAN VID (NIC
	// trust pcp).
	Tagged bool
	VID    uint16
	// IgnorePFC makes the NIC ignore received PFC (a misbehaving NIC).
	IgnorePFC bool
	// Storm, if set, makes the NIC send XOFF regardless of its buffer.
	Storm *PFCStorm
	// RDMA is set (by validation) when the NIC is the source or
	// destination of an RDMA flow (op): the simulator then runs a real NIC
	// (verbs, RC transport, DCQCN) instead of a synthetic endpoint.
	RDMA bool
	// CC is the congestion control of the NIC's QPs as its flows' cc
	// settle it: dcqcn, none, or "" for the NIC's default (dcqcn).
	CC string
	// DCQCN is the node's own dcqcn section (nil: Spec.DCQCN).
	DCQCN *cc.DCQCN

	// Line is where the node is defined, for messages of later stages.
	Line int
}

// PFCStorm is a NIC that keeps asserting XOFF for one priority.
type PFCStorm struct {
	Priority    uint8
	Start, Stop clock.Time // Stop 0: until the end of the run
	// Interval between XOFF frames; 0: half the pause quanta at the link
	// rate (wire.XoffRefresh), which keeps the peer paused without a gap.
	Interval clock.Time
}

// Port is one interface of a node.
type Port struct {
	Name  string // e.g. "p1", "eth0"; [a-zA-Z0-9_-], at most 15 characters
	Index int    // port number on its node, 0-based
	Node  *Node
	// Link is the link attached to this port, nil if unconnected.
	Link *Link
	// Peer is the port at the other end of Link, nil if unconnected.
	Peer *Port
}

// Route is one explicit forwarding entry of a switch.
type Route struct {
	// Dst is a node name (a NIC) or, for RoCE, an IPv4 prefix.
	Dst string
	// Prefix and Len are the parsed destination prefix (a NIC's /32 when
	// Dst names a node).
	Prefix [4]byte
	Len    int
	// Via are egress port indexes; more than one means ECMP.
	Via  []int
	Line int
}

// LinkParams are the physical parameters of a link (both directions).
type LinkParams struct {
	Rate    uint64     // bits per second
	Delay   clock.Time // propagation delay, one way
	MTU     int        // bytes of the largest frame payload (Ethernet) or IB MTU
	Loss    float64    // probability in [0, 1] that a frame is lost
	Corrupt float64    // probability in [0, 1] that a frame is corrupted
}

// Link joins two ports.
type Link struct {
	Index int
	// A and B are the endpoints in the order written.
	A, B *Port
	LinkParams
	// Schedule lists up/down changes in time order. A link starts up.
	Schedule []LinkEvent
	Line     int
}

// LinkEvent sets a link's state at a time.
type LinkEvent struct {
	At clock.Time
	Up bool
}

// QoS is a switch's QoS configuration with SONiC table and field names. All
// fields are optional; nil/empty means the switch default.
type QoS struct {
	PortQoSMap *PortQoSMap

	// Maps, sparse: only the entries written in the file.
	DSCPToTC       map[uint8]uint8 // DSCP_TO_TC_MAP (dscp 0..63 -> tc 0..7)
	Dot1pToTC      map[uint8]uint8 // DOT1P_TO_TC_MAP (pcp 0..7 -> tc)
	TCToPG         map[uint8]uint8 // TC_TO_PRIORITY_GROUP_MAP
	TCToQueue      map[uint8]uint8 // TC_TO_QUEUE_MAP
	PFCPrioToQueue map[uint8]uint8 // MAP_PFC_PRIORITY_TO_QUEUE

	BufferPools    map[string]*BufferPool    // BUFFER_POOL
	BufferProfiles map[string]*BufferProfile // BUFFER_PROFILE
	BufferPG       []BufferBinding           // BUFFER_PG
	BufferQueue    []BufferBinding           // BUFFER_QUEUE

	WREDProfiles map[string]*WREDProfile // WRED_PROFILE
	Schedulers   map[string]*Scheduler   // SCHEDULER
	Queues       []QueueBinding          // QUEUE

	PFCWD *PFCWatchdog // PFC_WD
}

// PortQoSMap is PORT_QOS_MAP, applied to every port of the switch.
type PortQoSMap struct {
	// PFCEnable is a bit mask of priorities with PFC (bit 3 = priority 3),
	// from pfc_enable "3,4".
	PFCEnable uint8
	// PFCEnableSet reports whether pfc_enable was written ("" -> no PFC).
	PFCEnableSet bool
}

// PoolType is BUFFER_POOL type.
type PoolType string

const (
	PoolIngress PoolType = "ingress"
	PoolEgress  PoolType = "egress"
)

// PoolMode is BUFFER_POOL mode.
type PoolMode string

const (
	PoolStatic  PoolMode = "static"
	PoolDynamic PoolMode = "dynamic"
)

// BufferPool is one BUFFER_POOL entry.
type BufferPool struct {
	Name string
	Size uint64 // bytes
	Type PoolType
	Mode PoolMode
	// Xoff is the shared headroom pool size in bytes (ingress lossless pool
	// only); 0 means per-PG headroom.
	Xoff uint64
	Line int
	path string // field path, for messages
}

// BufferProfile is one BUFFER_PROFILE entry.
type BufferProfile struct {
	Name string
	Pool string // a BUFFER_POOL name
	Size uint64 // reserved (guaranteed) bytes
	// DynamicTh is the alpha exponent (alpha = 2^DynamicTh) in [-8, 7]; set
	// when HasDynamicTh. Exactly one of dynamic_th and static_th is set.
	DynamicTh    int
	HasDynamicTh bool
	StaticTh     uint64 // bytes; set when !HasDynamicTh
	// Lossless only: XOFF headroom, XON threshold and offset, bytes. A
	// profile with Xoff > 0 is lossless.
	Xon       uint64
	Xoff      uint64
	XonOffset uint64
	Line      int
	path      string // field path, for messages
}

// Lossless reports whether the profile reserves headroom (has xoff).
func (p *BufferProfile) Lossless() bool { return p.Xoff > 0 }

// BufferBinding is one BUFFER_PG or BUFFER_QUEUE entry: which profile the
// given priority groups (or queues) of the given ports use.
type BufferBinding struct {
	// PortNames are the ports as written ("p1,p2|3-4"); nil means every
	// port. Ports are their indexes, resolved in Node.QoS only (the
	// top-level Spec.QoS applies to switches with different ports).
	PortNames []string
	Ports     []int
	// IDs is a bit mask of PGs (or queues) 0..7.
	IDs     uint8
	Profile string
	Line    int
	path    string // field path, for messages
}

// ECNMode is WRED_PROFILE ecn.
type ECNMode string

const (
	ECNNone        ECNMode = "ecn_none"
	ECNGreen       ECNMode = "ecn_green"
	ECNYellow      ECNMode = "ecn_yellow"
	ECNRed         ECNMode = "ecn_red"
	ECNGreenYellow ECNMode = "ecn_green_yellow"
	ECNGreenRed    ECNMode = "ecn_green_red"
	ECNYellowRed   ECNMode = "ecn_yellow_red"
	ECNAll         ECNMode = "ecn_all"
)

// MarkPoint says when WRED/ECN looks at the queue.
type MarkPoint string

const (
	MarkDequeue MarkPoint = "dequeue" // default, as Broadcom/Mellanox ASICs do
	MarkEnqueue MarkPoint = "enqueue"
)

// WREDColor is the WRED curve of one colour.
type WREDColor struct {
	Enable          bool   // wred_<color>_enable
	MinThreshold    uint64 // bytes
	MaxThreshold    uint64 // bytes
	DropProbability int    // percent at MaxThreshold, 0..100
}

// WREDProfile is one WRED_PROFILE entry. Simulated traffic is green.
type WREDProfile struct {
	Name   string
	ECN    ECNMode
	Green  WREDColor
	Yellow WREDColor
	Red    WREDColor
	Line   int
	path   string // field path, for messages
}

// SchedulerType is SCHEDULER type.
type SchedulerType string

const (
	SchedStrict SchedulerType = "STRICT"
	SchedDWRR   SchedulerType = "DWRR"
	SchedWRR    SchedulerType = "WRR"
)

// Scheduler is one SCHEDULER entry.
type Scheduler struct {
	Name   string
	Type   SchedulerType
	Weight int // 1..100, DWRR/WRR only
	Line   int
	path   string // field path, for messages
}

// QueueBinding is one QUEUE entry: the scheduler and WRED profile of the
// given queues of the given ports.
type QueueBinding struct {
	PortNames   []string // nil: every port
	Ports       []int    // resolved in Node.QoS only
	Queues      uint8    // bit mask
	Scheduler   string
	WREDProfile string
	Line        int
	path        string // field path, for messages
}

// PFCWDAction is PFC_WD action.
type PFCWDAction string

const (
	PFCWDDrop    PFCWDAction = "drop"
	PFCWDForward PFCWDAction = "forward"
	PFCWDAlert   PFCWDAction = "alert"
)

// PFCWatchdog is PFC_WD: GLOBAL POLL_INTERVAL and the setting of every port
// (key `ports`). Defaults are SONiC's: detection 200 ms, restoration 200 ms,
// poll 200 ms, action drop. Present means enabled.
type PFCWatchdog struct {
	PollInterval    clock.Time
	DetectionTime   clock.Time
	RestorationTime clock.Time
	Action          PFCWDAction
	Line            int
}

// IBConfig is the InfiniBand link-layer QoS of a node (OpenSM vocabulary
// without the qos_ prefix) and its buffer.
type IBConfig struct {
	// MaxVLs is the number of data VLs, VL0..MaxVLs-1 (1..8).
	MaxVLs int
	// SL2VL maps the 16 SLs to VLs (OpenSM qos_sl2vl).
	SL2VL [16]uint8
	// VLArbHigh and VLArbLow are the arbitration tables: (VL, weight in
	// 64-byte units) pairs (qos_vlarb_high, qos_vlarb_low).
	VLArbHigh []VLArbEntry
	VLArbLow  []VLArbEntry
	// HighLimit bounds high-priority bytes before a low-priority
	// opportunity, in 4 KiB units; 255 = unlimited (qos_high_limit).
	HighLimit int
	// VLBuffer is the receive buffer per data VL in bytes, a multiple of
	// 64 (credits are 64-byte blocks) and at most 128 KiB (the 2048-block
	// credit window).
	VLBuffer uint64
	// CreditUpdate is the minimum interval between periodic flow-control
	// packets per VL.
	CreditUpdate clock.Time
	// SM runs a subnet manager on one host (top-level ib section only; a
	// node's copy points at the lab's). nil: LIDs and forwarding tables
	// are set statically from the lab file. See IBSubnetManager.
	SM *IBSubnetManager
	// CC is InfiniBand congestion control (IBA Annex A10): FECN marking in
	// the switches, CN packets and CCTI pacing in the hosts (ibcc.go).
	// nil: off.
	CC *IBCC

	// badVLs: the file's max_vls was refused, so tables checked against
	// it (here or in a node's section that inherits it) are not checked.
	badVLs bool
}

// VLArbEntry is one VL arbitration table entry.
type VLArbEntry struct {
	VL     uint8
	Weight uint8
}

// FlowKind is what a traffic source sends.
type FlowKind string

const (
	// FlowRDMAWrite: RC RDMA WRITE FIRST/MIDDLE/LAST (or ONLY) packets.
	FlowRDMAWrite FlowKind = "rdma_write"
	// FlowUDSend: UD SEND ONLY packets with DETH.
	FlowUDSend FlowKind = "ud_send"
)

// Arrival says when a source starts its next message.
type Arrival string

const (
	// ArrivalBackToBack starts the next message when the last is sent.
	ArrivalBackToBack Arrival = "back_to_back"
	// ArrivalPoisson starts messages with exponential gaps so that the
	// offered load is Load × Rate.
	ArrivalPoisson Arrival = "poisson"
	// ArrivalOnOff sends back to back for On, then pauses for Off.
	ArrivalOnOff Arrival = "onoff"
)

// SizeDist is a message-size distribution.
type SizeDist string

const (
	DistFixed       SizeDist = "fixed"
	DistUniform     SizeDist = "uniform"
	DistExponential SizeDist = "exponential"
	DistCDF         SizeDist = "cdf"
)

// MessageSize is the distribution of message sizes, in bytes.
type MessageSize struct {
	Dist SizeDist
	// Fixed: Size. Uniform: [Min, Max]. Exponential: Mean (capped at Max
	// when Max > 0). CDF: Points.
	Size, Min, Max, Mean uint64
	Points               []CDFPoint
}

// CDFPoint is one point of an empirical size CDF: P(size <= Size) = P.
// Points are in increasing Size and P order; the last P is 1.
type CDFPoint struct {
	Size uint64
	P    float64
}

// Pattern is how a traffic entry with lists of sources or destinations
// expands into flows.
type Pattern string

const (
	PatternOne      Pattern = "one"        // one src, one dst
	PatternIncast   Pattern = "incast"     // every src -> the one dst
	PatternFanout   Pattern = "fanout"     // the one src -> every dst, a flow each
	PatternPairs    Pattern = "pairs"      // src[i] -> dst[i]
	PatternAllToAll Pattern = "all_to_all" // a flow per (src, dst), src != dst
	// PatternRandom gives every src one flow whose messages each go to a
	// destination drawn (seeded) from dst, excluding src.
	PatternRandom Pattern = "random"
)

// Flow is one traffic source.
type Flow struct {
	// Name is unique: the traffic entry's name, with "/<src>" (incast,
	// random), "/<dst>" (fanout) or "/<src>-<dst>" (pairs, all_to_all)
	// appended when the entry expands to several flows.
	Name string
	// Group is the name of the traffic entry the flow came from; Pattern
	// how it expanded.
	Group   string
	Pattern Pattern
	Src     *Node
	// Dst has one node, or several for PatternRandom.
	Dst  []*Node
	Kind FlowKind

	// Rate is the sending rate while active, bits per second (default: the
	// source's link rate).
	Rate uint64
	Size MessageSize
	// Count is the number of messages (0: unlimited until Stop).
	Count int
	// Start and Stop bound when the source may start messages (Stop 0:
	// the end of the run). A message started before Stop is completed.
	Start, Stop clock.Time

	Arrival Arrival
	Load    float64    // Poisson: offered load as a fraction of Rate, (0, 1]
	On, Off clock.Time // OnOff

	// RoCE classification: the frame's PCP and DSCP, and whether it is
	// sent ECN-capable (ECT(0)). Defaults: priority 3, DSCP 8×priority+2
	// (26 for 3), ECN true.
	Priority uint8
	DSCP     uint8
	ECN      bool
	// IB service level (fabric ib), default 0.
	SL uint8
	// PMTU is the RDMA path MTU (256, 512, 1024, 2048 or 4096), default the
	// largest that fits the path's smallest link MTU.
	PMTU int
	// UDP source port for ECMP; 0 means derived from the QPNs as Linux
	// does (wire.RoCESourcePort).
	SrcPort uint16

	// RDMA flows (rdma.go). Op is the verb, OpNone for a raw flow. QPs
	// connections each post Count messages of Size (or until Stop; with
	// neither, until the end of the run), Depth in flight (default 1 QP,
	// depth 16). CC is the data sender's congestion
	// control as written ("" when not).
	Op    RDMAOp
	QPs   int
	Depth int
	CC    string

	Line int
	path string // field path of the traffic entry, for messages
}

// SimParams is the sim section.
type SimParams struct {
	Duration       clock.Time // default 10 ms
	SampleInterval clock.Time // default Spec.DefaultSampleInterval(Duration)
	Seed           uint64     // default 1; `emulab sim --seed` overrides
	// DeadlockWindow: when no frame has moved for this long while queues
	// are non-empty, the run reports a deadlock. Default 1 ms.
	DeadlockWindow clock.Time
	// MaxEvents bounds the events of one run (0: unlimited); the run ends
	// with an error when the budget is spent.
	MaxEvents uint64
	// sampleSet: the file gives sample_interval (validateSampling).
	sampleSet bool
}

// SampleIntervalGiven says whether the file gives sample_interval; when
// it does not, SampleInterval is the default for Duration, to be made
// again for another duration (emulab sim --duration).
func (p SimParams) SampleIntervalGiven() bool { return p.sampleSet }

// Node returns the node with the given name, or nil.
func (s *Spec) Node(name string) *Node {
	for _, n := range s.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Switches returns the switch nodes in file order.
func (s *Spec) Switches() []*Node { return s.nodesOfKind(KindSwitch) }

// NICs returns the NIC nodes in file order.
func (s *Spec) NICs() []*Node { return s.nodesOfKind(KindNIC) }

func (s *Spec) nodesOfKind(k NodeKind) []*Node {
	var out []*Node
	for _, n := range s.Nodes {
		if n.Kind == k {
			out = append(out, n)
		}
	}
	return out
}

// Port returns the node's port with the given name, or nil.
func (n *Node) Port(name string) *Port {
	for _, p := range n.Ports {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// String returns "node:port".
func (p *Port) String() string { return p.Node.Name + ":" + p.Name }

// Dilation is the factor a daemon's clock runs by: its --time-dilation
// flag when given (>= 1), else the file's time_dilation (1 when unset).
func (s *Spec) Dilation(flag int) int {
	if flag >= 1 {
		return flag
	}
	return max(s.TimeDilation, 1)
}
