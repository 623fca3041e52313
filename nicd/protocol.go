package nicd

import (
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/nic"
)

// The control protocol: one JSON object per line each way over a unix
// stream socket (mode 0600), as emuswitch's. Every request has an "op";
// every response has "ok" and, when ok is false, "error".
//
//	{"op":"status"}
//	{"op":"counters"}                 ports[].counters (ethtool -S, mlx5 names), hw_counters, and the text layouts
//	{"op":"mlnx_qos"}                 text: the `mlnx_qos -i` layout
//	{"op":"sm","what":"nodes"|"list"|"ports"|"routes","node":N}  text: the SM's last sweep (the emunic that runs ib.sm)
//	{"op":"perfquery","lid":L}        port_counters: PortCounters of the port with LID L, read over the fabric from QP1
//	{"op":"link","state":"down"|"up"}  pull / plug the NIC's cable
//	{"op":"capture"}                  OK line, then a pcapng stream of the link port until the client closes
//	                                  (a half-close ends it with the queued records and a statistics block);
//	                                  "pad_links":true pads IB link packets to 64 bytes (capture.go)
//	{"op":"reg_mr","length":N,"access":7}     + one memfd as SCM_RIGHTS in the same message
//	{"op":"dereg_mr","mr":H}
//	{"op":"create_cq","cqe":N}
//	{"op":"create_qp","qp_type":"rc","send_cq":H,"recv_cq":H,"max_send_wr":N,"max_recv_wr":N}
//	{"op":"connect","qp":H,"remote":{"qpn":..,"psn":..,"gid":"::ffff:10.0.0.2","mac":"02:00:00:00:00:02"},"attr":{...}}
//	{"op":"post_send","qp":H,"wr":{...},"repeat":N}
//	{"op":"post_recv","qp":H,"wr":{...},"repeat":N}
//	{"op":"poll_cq","cq":H,"max":N,"min":M,"timeout_ms":T}
//	{"op":"perf_bw","bw":{"qp":H,"cq":H,"wr":{...},"depth":N,"iters":N,"cq_mod":N,"duration_ms":T}}  bw: the run (perf_bw.go)
//	{"op":"perf_lat","lat":{"qp":H,"cq":H,"wr":{...},"iters":N,"ping_pong":B,"recv":{...}}}  lat_ns: post to completion (ping_pong: half to the answer) per message
//	{"op":"perf_pong","pong":{"qp":H,"cq":H,"wr":{...},"watch":{"addr":A,"lkey":K},"recv":{...},"iters":N}}  the server's side of a ping-pong latency run (perf_pong.go)
//	{"op":"perf_recv","recv":{"qp":H,"cq":H,"wr":{...},"stock":N,"iters":N}}  recv: the responder's side of a SEND run (perf_recv.go)
//	{"op":"destroy_qp","qp":H}
//
// Handles (H) name a session's objects; a session is one connection, and
// everything it created is destroyed and unmapped when it closes. Numbers
// with verbs meaning keep their libibverbs values: access flags
// (ibv_access_flags), opcodes (ibv_wr_opcode), completion status and
// opcode (ibv_wc_status, ibv_wc_opcode).

// Request is one control request.
type Request struct {
	Op string `json:"op"`

	// sm: which infiniband-diags output of the SM's last sweep (nodes,
	// list, ports, routes) and, optionally, of which node only.
	What string `json:"what,omitempty"`
	Node string `json:"node,omitempty"`
	// perfquery: the LID whose port counters to read over the fabric.
	LID uint16 `json:"lid,omitempty"`

	// reg_mr
	Length uint64          `json:"length,omitempty"`
	Access nic.AccessFlags `json:"access,omitempty"`

	MR  uint32 `json:"mr,omitempty"`
	CQ  uint32 `json:"cq,omitempty"`
	QP  uint32 `json:"qp,omitempty"`
	CQE int    `json:"cqe,omitempty"`

	// create_qp
	QPType    string `json:"qp_type,omitempty"` // "rc" (default) or "uc"
	SendCQ    uint32 `json:"send_cq,omitempty"`
	RecvCQ    uint32 `json:"recv_cq,omitempty"`
	MaxSendWR int    `json:"max_send_wr,omitempty"`
	MaxRecvWR int    `json:"max_recv_wr,omitempty"`

	// connect
	Remote *QPInfo      `json:"remote,omitempty"`
	Attr   *ConnectAttr `json:"attr,omitempty"`

	// post_send, post_recv
	WR     *WorkRequest `json:"wr,omitempty"`
	Repeat int          `json:"repeat,omitempty"`

	// capture: the ports to capture (emuswitch's field); this NIC has one
	Ports []string `json:"ports,omitempty"`
	// PadLinks (capture, IB NIC) pads link packets to 64 bytes for
	// Wireshark 4.0, as emuswitch's field (capture.go).
	PadLinks bool `json:"pad_links,omitempty"`

	// link (the emuswitch op's fields; emunic takes state and rate)
	Port  string   `json:"port,omitempty"`
	State string   `json:"state,omitempty"` // "up" or "down"
	Rate  string   `json:"rate,omitempty"`
	Delay string   `json:"delay,omitempty"`
	Loss  *float64 `json:"loss,omitempty"`
	// Corrupt, Loss and Delay: emuswitch's, and an emunic's whose link's
	// other end is a NIC (the wire toward it).
	Corrupt *float64 `json:"corrupt,omitempty"`
	// Schedule replaces the link's schedule (lab.ScheduleStep; emuswitch's
	// field): state changes at times counted from now; [] cancels it.
	Schedule []lab.ScheduleStep `json:"schedule"`

	// poll_cq
	Max       int `json:"max,omitempty"`
	Min       int `json:"min,omitempty"`
	TimeoutMs int `json:"timeout_ms,omitempty"`

	// perf_bw, perf_lat, perf_recv, perf_pong: perftest's loops, run by the daemon
	BW   *BWParams   `json:"bw,omitempty"`
	Lat  *LatParams  `json:"lat,omitempty"`
	Recv *RecvParams `json:"recv,omitempty"`
	Pong *PongParams `json:"pong,omitempty"`
}

// Response is one control response.
type Response struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`

	Status *Status `json:"status,omitempty"`

	// perfquery
	PortCounters *mad.PortCountersFields `json:"port_counters,omitempty"`

	// counters
	Ports      []PortCounters    `json:"ports,omitempty"`
	HWCounters map[string]uint64 `json:"hw_counters,omitempty"`
	Transport  map[string]uint64 `json:"transport,omitempty"`
	Ethtool    string            `json:"ethtool,omitempty"` // `ethtool -S` layout
	RDMA       string            `json:"rdma,omitempty"`    // `rdma statistic show link DEV/1` layout
	// mlnx_qos
	Text string `json:"text,omitempty"`

	MR     *MRInfo `json:"mr,omitempty"`
	CQ     uint32  `json:"cq,omitempty"`
	QP     *QPInfo `json:"qp,omitempty"`
	Posted int     `json:"posted,omitempty"`
	WC     []WC    `json:"wc,omitempty"`
	// perf_bw, perf_lat (one sample per message, nanoseconds), perf_recv
	BW    *BWResult   `json:"bw,omitempty"`
	LatNs []int64     `json:"lat_ns,omitempty"`
	Recv  *RecvResult `json:"recv,omitempty"`
}

// Status is the daemon's state.
type Status struct {
	Lab             string  `json:"lab"`
	Node            string  `json:"node"`
	Pid             int     `json:"pid"`
	UptimeS         float64 `json:"uptime_s"`
	MAC             string  `json:"mac"`
	IP              string  `json:"ip"`
	GID             string  `json:"gid"`
	Port            string  `json:"port"`                       // the lab port (eth0)
	Transport       string  `json:"transport"`                  // the link URI
	Link            string  `json:"link"`                       // up, down, waiting
	AdminDown       bool    `json:"admin_down,omitempty"`       // set down by the link op
	SchedulePending int     `json:"schedule_pending,omitempty"` // link schedule steps still to run
	LinkError       string  `json:"link_error,omitempty"`
	RateBps         uint64  `json:"rate_bps"`
	LinkMTU         int     `json:"link_mtu"`
	PortMTU         int     `json:"port_mtu"` // active IB MTU of the RoCE port
	TAP             string  `json:"tap,omitempty"`
	Netns           string  `json:"netns,omitempty"`
	TimeDilation    int     `json:"time_dilation"`
	Trust           string  `json:"trust"`
	Sessions        int     `json:"sessions"`
	QPs             int     `json:"qps"`
	GateHolds       uint64  `json:"gate_holds"` // times the transport held the NIC back
	// IB: the port's LID and logical state (as ibstat prints it), and the
	// subnet manager's figures on the host that runs it.
	LID     uint16    `json:"lid,omitempty"`
	IBState string    `json:"ib_state,omitempty"`
	SM      *SMStatus `json:"sm,omitempty"`
	// Wire is the emulated wire toward this NIC when a NIC is at the
	// link's other end (no switch port emulates it).
	Wire *WireStatus `json:"wire,omitempty"`
}

// WireStatus is an emulated wire's delay (one way), loss and corruption
// probabilities.
type WireStatus struct {
	Delay   string  `json:"delay"`
	Loss    float64 `json:"loss"`
	Corrupt float64 `json:"corrupt"`
}

// SMStatus is the subnet manager's state (the emunic that runs ib.sm).
type SMStatus struct {
	HeavySweeps   int         `json:"heavy_sweeps"`
	LightSweeps   int         `json:"light_sweeps"`
	SMPsSent      uint64      `json:"smps_sent"`
	Timeouts      uint64      `json:"timeouts"`
	LastSweepSMPs uint64      `json:"last_sweep_smps"`
	LastSweepUs   float64     `json:"last_sweep_us"`
	Nodes         int         `json:"nodes"`
	LIDs          []SMNodeLID `json:"lids,omitempty"`
	Errors        []string    `json:"errors,omitempty"`
}

// SMNodeLID is one node the SM found and the LID it holds.
type SMNodeLID struct {
	Node string `json:"node"` // NodeDescription
	LID  uint16 `json:"lid"`
}

// PortCounters are one port's counters (the emuswitch layout).
type PortCounters struct {
	Port     string            `json:"port"`
	Counters map[string]uint64 `json:"counters"`
}

// MRInfo describes a registered region.
type MRInfo struct {
	Handle uint32 `json:"handle"`
	Addr   uint64 `json:"addr"` // the region's address for SGEs and remote peers
	Length uint64 `json:"length"`
	LKey   uint32 `json:"lkey"`
	RKey   uint32 `json:"rkey"`
}

// QPInfo is what the other side of a connection needs (what perftest
// exchanges: QPN, PSN, GID) plus the MAC a RoCE address vector carries
// and the local handle.
type QPInfo struct {
	Handle uint32 `json:"handle,omitempty"`
	QPN    uint32 `json:"qpn"`
	PSN    uint32 `json:"psn"`
	GID    string `json:"gid"`
	MAC    string `json:"mac"`
	MTU    int    `json:"mtu,omitempty"` // the port's active MTU in bytes
	LID    uint16 `json:"lid,omitempty"` // IB: the port's LID, which addresses it
}

// ConnectAttr are the connection's knobs; zero takes the default noted.
type ConnectAttr struct {
	MTU          int   `json:"mtu,omitempty"`           // bytes; default the smaller port MTU
	Timeout      uint8 `json:"timeout,omitempty"`       // default 14
	RetryCnt     uint8 `json:"retry_cnt,omitempty"`     // default 7
	RNRRetry     uint8 `json:"rnr_retry,omitempty"`     // default 7
	MinRNRTimer  uint8 `json:"min_rnr_timer,omitempty"` // default 12
	MaxRdAtomic  uint8 `json:"max_rd_atomic,omitempty"` // default 16
	TrafficClass uint8 `json:"traffic_class,omitempty"` // DSCP<<2; 0: the NIC's RoCE DSCP
	SL           uint8 `json:"sl,omitempty"`
}

// SGE is one scatter/gather element (struct ibv_sge).
type SGE struct {
	Addr   uint64 `json:"addr"`
	Length uint32 `json:"length"`
	LKey   uint32 `json:"lkey"`
}

// WorkRequest is a send or receive work request.
type WorkRequest struct {
	WRID       uint64       `json:"wr_id"`
	Opcode     nic.WROpcode `json:"opcode"` // send only
	SG         []SGE        `json:"sg"`
	Signaled   bool         `json:"signaled,omitempty"`
	Imm        uint32       `json:"imm,omitempty"`
	RemoteAddr uint64       `json:"remote_addr,omitempty"`
	RKey       uint32       `json:"rkey,omitempty"`
}

// WC is a work completion.
type WC struct {
	WRID    uint64       `json:"wr_id"`
	Status  nic.WCStatus `json:"status"`
	Opcode  nic.WCOpcode `json:"opcode"`
	ByteLen uint32       `json:"byte_len"`
	Imm     uint32       `json:"imm,omitempty"`
	QPNum   uint32       `json:"qp_num"`
	Flags   nic.WCFlags  `json:"wc_flags,omitempty"`
}
