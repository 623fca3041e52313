package nic

import (
	"fmt"
	"net/netip"

	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// Trust selects what the classifier reads to pick a frame's priority
// (mlnx_qos --trust pcp|dscp).
type Trust uint8

const (
	TrustDSCP Trust = iota // IP DSCP through dscp2prio; non-IP frames get priority 0
	TrustPCP               // the 802.1Q PCP; untagged frames get priority 0
)

func (t Trust) String() string {
	if t == TrustPCP {
		return "pcp"
	}
	return "dscp"
}

// Retransmit selects how the requester recovers from a lost packet.
type Retransmit uint8

const (
	// GoBackN resends from the first unacknowledged PSN (the IBA reliable service,
	// what every RoCE NIC does today).
	GoBackN Retransmit = iota
	// GoBack0 restarts the whole message, and the responder discards a
	// partly received message on a sequence error. This is the older NIC
	// behaviour Guo et al. (SIGCOMM'16, §4.2) showed livelocks at small
	// loss rates; it exists to reproduce that result.
	GoBack0
)

// Fabric selects the NIC's link layer.
type Fabric uint8

const (
	// FabricRoCE: Ethernet / 802.1Q / IP / UDP 4791 / BTH ... ICRC, PFC.
	FabricRoCE Fabric = iota
	// FabricIB: native InfiniBand, LRH [GRH] BTH ... ICRC VCRC, per-VL
	// credit flow control with link packets (IBA 7.9), IB congestion
	// control (Annex A10) and IPoIB for the host's traffic.
	FabricIB
)

func (f Fabric) String() string {
	if f == FabricIB {
		return "ib"
	}
	return "roce"
}

// Config describes one NIC. Zero values take the defaults DefaultConfig
// documents; New validates.
type Config struct {
	Name string
	MAC  wire.MAC
	// IP is the NIC's address: its RoCEv2 GID is this address (IPv4-mapped
	// for IPv4). Frames whose destination IP is not IP go to the host.
	IP netip.Addr
	// Fabric is the link layer (default RoCE). Under FabricIB the MAC
	// and IP are the host interface's (IPoIB), and the fields below
	// marked IB apply.
	Fabric Fabric
	// LID is the port's LID (IB; 1..0xBFFF).
	LID uint16
	// IBDataVLs is the number of data VLs (IB; 1..8, default 1): the
	// port's priority queues 0..IBDataVLs-1 are its VLs.
	IBDataVLs int
	// SL2VL maps an SL to a data VL (IB); nil means SL mod IBDataVLs.
	SL2VL *[16]uint8
	// IBBlocksPerVL is the receive buffer the NIC advertises per VL, in
	// 64-byte credit blocks (IB; default 1024, at most 2048 so the
	// 12-bit credit window stays unambiguous).
	IBBlocksPerVL int
	// IBFCRefresh is the longest time between two flow-control packets of
	// a VL (IB; default 64 us). IBA 7.9.4.2 asks for one at least every
	// 65,536 symbol times; a real-time daemon may choose longer to spare
	// wake-ups, since a lost update is only a delay.
	IBFCRefresh clock.Time
	// IBLinkTimeout (IB) takes the port's logical link down when nothing,
	// not even a flow-control packet, arrives for that long, and brings it
	// back with the next packet: a disabled peer port stops its
	// flow-control packets. It must exceed the peer's refresh period. 0
	// turns the check off (the simulator tells the NIC about its links).
	IBLinkTimeout clock.Time
	// IBCC configures the IB congestion control reaction point (IB, CC
	// "ibcc"); nil means cc.DefaultIBCC().
	IBCC *cc.IBCC
	// SMA gives the port a subnet management agent on QP0 (IB): an SM
	// then sets its LID (LID 0 is allowed: the SM assigns one) and makes
	// it Active before data flows. nil: the port is configured statically
	// and VL15 packets are dropped and counted.
	SMA *SMAConfig
	// IPoIB carries the host's IP traffic over the IB fabric (IB); nil
	// sends nothing of the host's and drops IPoIB packets.
	IPoIB *IPoIB

	// Rate is the link speed in bits per second (egress serialization,
	// PFC quanta, the DCQCN line rate).
	Rate uint64

	// PortMTU is the port's active IB MTU in bytes (256..4096): the
	// largest RoCE payload per packet; a QP's path MTU is capped to it and
	// UD messages may not exceed it. Default 4096.
	PortMTU int

	// Classification (mlnx_qos vocabulary).
	Trust Trust
	// DSCP2Prio maps DSCP to priority under trust dscp; nil means the
	// default DSCP>>3 (26 -> 3, 48 -> 6).
	DSCP2Prio *[64]uint8
	// PFC lists, per priority, whether received PFC for it is honoured
	// (mlnx_qos --pfc 0,0,0,1,0,0,0,0). nil honours every priority, which
	// is what an 802.3x PAUSE asks anyway.
	PFC *[8]bool
	// Tagged sends the engine's frames with an 802.1Q tag whose PCP is the
	// frame's priority (needed under trust pcp); VID is the tag's VLAN.
	Tagged bool
	VID    uint16

	// RoCE traffic class: DSCP of data, ACK and NAK frames (default 26)
	// and whether they are marked ECT(0) (default true; set NotECT to
	// send Not-ECT).
	RoCEDSCP uint8
	NotECT   bool
	// PKeys is the partition table; QPs name an index into it. nil means
	// the single default partition 0xFFFF.
	PKeys []uint16

	// Congestion control. CC selects the reaction point algorithm of each
	// QP: "dcqcn" (default) or "none" (CNPs counted as rp_cnp_ignored).
	// DCQCN holds the knobs for both the RP and the NP; zero means
	// cc.NVIDIAProfile(). NPDisabled turns off CNP generation.
	CC         string
	DCQCN      *cc.DCQCN
	NPDisabled bool

	// Transport.
	Retransmit Retransmit
	// AckReqEvery sets AckReq on every Nth packet of a long message as
	// well as on its last one (rxe uses 64). Default 16.
	AckReqEvery int
	// MaxInflight bounds the PSNs a requester has outstanding (sent and
	// not acknowledged). Default 4096.
	MaxInflight int
	// HostQueueFrames bounds each priority's queue of host and control
	// frames; beyond it a host frame is dropped (tx_queue_dropped).
	// Default 1024.
	HostQueueFrames int
}

// DefaultConfig returns a configuration with every default filled in.
func DefaultConfig(name string, mac wire.MAC, ip netip.Addr, rate uint64) *Config {
	c := &Config{Name: name, MAC: mac, IP: ip, Rate: rate}
	c.fill()
	return c
}

func (c *Config) fill() {
	if c.RoCEDSCP == 0 {
		c.RoCEDSCP = 26
	}
	if c.PortMTU == 0 {
		c.PortMTU = 4096
	}
	if c.PKeys == nil {
		c.PKeys = []uint16{0xFFFF}
	}
	if c.CC == "" {
		c.CC = "dcqcn"
		if c.Fabric == FabricIB {
			c.CC = "ibcc"
		}
	}
	if c.Fabric == FabricIB {
		if c.IBDataVLs == 0 {
			c.IBDataVLs = 1
		}
		if c.IBBlocksPerVL == 0 {
			c.IBBlocksPerVL = 1024
		}
		if c.IBFCRefresh == 0 {
			c.IBFCRefresh = 64 * clock.Microsecond
		}
		if c.IBCC == nil {
			d := cc.DefaultIBCC()
			c.IBCC = &d
		}
	}
	if c.DCQCN == nil {
		p := cc.NVIDIAProfile()
		c.DCQCN = &p
	}
	if c.AckReqEvery == 0 {
		c.AckReqEvery = 16
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = 4096
	}
	if c.HostQueueFrames == 0 {
		c.HostQueueFrames = 1024
	}
}

// Validate reports the first bad field.
func (c *Config) Validate() error {
	switch {
	case c.Rate == 0:
		return fmt.Errorf("nic %q: rate must be > 0", c.Name)
	case !c.IP.IsValid():
		return fmt.Errorf("nic %q: ip is not set", c.Name)
	case c.Trust > TrustPCP:
		return fmt.Errorf("nic %q: trust must be pcp or dscp", c.Name)
	case c.RoCEDSCP > 63:
		return fmt.Errorf("nic %q: roce dscp %d out of 0..63", c.Name, c.RoCEDSCP)
	case c.VID > 4095:
		return fmt.Errorf("nic %q: vid %d out of 0..4095", c.Name, c.VID)
	case c.PortMTU < 256 || c.PortMTU > 4096 || c.PortMTU&(c.PortMTU-1) != 0:
		return fmt.Errorf("nic %q: port mtu %d: want 256, 512, 1024, 2048 or 4096", c.Name, c.PortMTU)
	case len(c.PKeys) == 0:
		return fmt.Errorf("nic %q: empty pkey table", c.Name)
	case c.Fabric > FabricIB:
		return fmt.Errorf("nic %q: unknown fabric %d", c.Name, c.Fabric)
	case c.Fabric == FabricRoCE && c.CC != "dcqcn" && c.CC != "none":
		return fmt.Errorf("nic %q: cc %q: want dcqcn or none", c.Name, c.CC)
	case c.Fabric == FabricIB && c.CC != "ibcc" && c.CC != "none":
		return fmt.Errorf("nic %q: cc %q: an IB port runs ibcc or none", c.Name, c.CC)
	case c.AckReqEvery < 1:
		return fmt.Errorf("nic %q: ack_req_every must be >= 1", c.Name)
	case c.MaxInflight < 1 || c.MaxInflight >= 1<<23:
		return fmt.Errorf("nic %q: max_inflight must be in 1..2^23-1 (the 24-bit PSN space allows fewer than 2^23 outstanding)", c.Name)
	case c.HostQueueFrames < 1:
		return fmt.Errorf("nic %q: host_queue_frames must be >= 1", c.Name)
	case c.Retransmit > GoBack0:
		return fmt.Errorf("nic %q: unknown retransmit mode %d", c.Name, c.Retransmit)
	}
	if c.DSCP2Prio != nil {
		for d, p := range c.DSCP2Prio {
			if p > 7 {
				return fmt.Errorf("nic %q: dscp2prio %d -> %d: priority out of 0..7", c.Name, d, p)
			}
		}
	}
	if c.Fabric == FabricIB {
		if err := c.validateIB(); err != nil {
			return err
		}
	}
	if err := c.DCQCN.Validate(); err != nil {
		return fmt.Errorf("nic %q: %w", c.Name, err)
	}
	return nil
}
