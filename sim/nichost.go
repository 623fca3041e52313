package sim

import (
	"fmt"
	"net/netip"

	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/wire"
)

// NICConfig describes a host whose port is a real RDMA NIC (package nic):
// verbs, RC transport with go-back-N, per-QP DCQCN pacing, CNP generation,
// PFC honouring. Its traffic is RDMA operations between QPs (AddRDMAFlow)
// rather than the synthetic frames of a Host. Zero fields take the NIC's
// defaults (nic.Config).
type NICConfig struct {
	Name string
	MAC  [6]byte // zero: 02:00:01:00:<idx>
	IP   [4]byte // zero: 10.1.<idx/256>.<idx%256+1>
	// DSCPToPrio is the NIC's dscp2prio (trust dscp); nil: DSCP>>3.
	DSCPToPrio *[64]uint8
	// Trust pcp classifies by the 802.1Q PCP; the NIC then sends tagged
	// frames (Tagged) in VLAN VID.
	Trust  nic.Trust
	Tagged bool
	VID    uint16
	// CC is the reaction point algorithm of the NIC's QPs: "dcqcn"
	// (default) or "none". DCQCN holds the RP and NP knobs; nil means
	// cc.NVIDIAProfile(). NPDisabled turns off CNP generation.
	CC         string
	DCQCN      *cc.DCQCN
	NPDisabled bool
	// IgnorePFC makes the NIC ignore received PFC on every priority.
	IgnorePFC  bool
	Retransmit nic.Retransmit

	// Native IB (Fabric FabricIB): the NIC frames LRH/BTH/ICRC/VCRC and
	// runs per-VL credits; LID addresses it (ManageIB clears it and gives
	// the NIC an SMA, for the SM to assign one). IBCC configures its IB
	// CC reaction point (CC "ibcc");
	// nil turns congestion control off, as on a synthetic IB host.
	Fabric        Fabric
	LID           uint16
	IBDataVLs     int
	IBSL2VL       *[16]uint8
	IBBlocksPerVL int
	IBCC          *cc.IBCC
}

// nicHost places a nic.NIC in the simulation. The NIC itself is created at
// Start, when its link (and so its rate) is known.
type nicHost struct {
	s    *Sim
	cfg  NICConfig
	idx  int
	n    *nic.NIC
	tx   *linkDir
	link *Link
	// managed: an SM (ManageIB) configures the IB port through its SMA;
	// isSM: the SM runs here.
	managed, isSM bool
}

func (h *nicHost) deliver(_ int, f *frame.Frame) { h.n.Receive(f) }
func (h *nicHost) headBytes() int                { return h.n.HeadBytes() } // 0: whole frame
func (h *nicHost) linkState(_ int, up bool)      { h.n.SetLinkUp(up) }
func (h *nicHost) ib() bool                      { return h.cfg.Fabric == FabricIB }

// AddNIC adds a host with an RDMA NIC.
func (s *Sim) AddNIC(cfg NICConfig) error {
	h := &nicHost{s: s, cfg: cfg, idx: len(s.nics)}
	switch {
	case cfg.Fabric == FabricIB && cfg.CC != "" && cfg.CC != "ibcc" && cfg.CC != "none":
		return fmt.Errorf("sim: nic %s: cc %q: an IB NIC runs ibcc or none", cfg.Name, cfg.CC)
	case cfg.Fabric != FabricIB && cfg.CC != "" && cfg.CC != "dcqcn" && cfg.CC != "none":
		return fmt.Errorf("sim: nic %s: cc %q: want dcqcn or none", cfg.Name, cfg.CC)
	}
	if cfg.DCQCN != nil {
		if err := cfg.DCQCN.Validate(); err != nil {
			return fmt.Errorf("sim: nic %s: %w", cfg.Name, err)
		}
	}
	if err := s.addNode(cfg.Name, h); err != nil {
		return err
	}
	if cfg.MAC == ([6]byte{}) {
		h.cfg.MAC = [6]byte{0x02, 0, 1, 0, byte((h.idx + 1) >> 8), byte(h.idx + 1)}
	}
	if cfg.IP == ([4]byte{}) {
		h.cfg.IP = [4]byte{10, 1, byte(h.idx / 256), byte(h.idx%256 + 1)}
	}
	s.nics = append(s.nics, h)
	return nil
}

// NIC returns the named host's NIC (nil before Start or if the node is not
// a NIC host).
func (s *Sim) NIC(name string) *nic.NIC {
	if h, ok := s.nodes[name].(*nicHost); ok {
		return h.n
	}
	return nil
}

func (s *Sim) nicHost(name string) *nicHost {
	h, _ := s.nodes[name].(*nicHost)
	return h
}

// slToVL is an IB NIC's VL for an SL (its SL2VL reduced to its data VLs,
// as a synthetic IB host does).
func (h *nicHost) slToVL(sl uint8) uint8 {
	vls := uint8(max(h.cfg.IBDataVLs, 1))
	if h.cfg.IBSL2VL != nil {
		return h.cfg.IBSL2VL[sl&15] % vls
	}
	return sl % vls
}

// dscpToPrio is the NIC's classification of a DSCP (trust dscp).
func (h *nicHost) dscpToPrio(dscp uint8) uint8 {
	if h.cfg.DSCPToPrio != nil {
		return h.cfg.DSCPToPrio[dscp&63] & 7
	}
	return (dscp & 63) >> 3
}

// startNICs creates every NIC on its link's rate and attaches it, then
// connects the RDMA flows' QPs and arms their streams.
func (s *Sim) startNICs() error {
	for _, h := range s.nics {
		if h.tx == nil {
			return fmt.Errorf("sim: nic %s is not connected", h.cfg.Name)
		}
		c := &nic.Config{
			Name: h.cfg.Name, MAC: wire.MAC(h.cfg.MAC), IP: netip.AddrFrom4(h.cfg.IP), Rate: h.link.Cfg.Rate,
			Trust: h.cfg.Trust, DSCP2Prio: h.cfg.DSCPToPrio, Tagged: h.cfg.Tagged, VID: h.cfg.VID,
			CC: h.cfg.CC, DCQCN: h.cfg.DCQCN, NPDisabled: h.cfg.NPDisabled, Retransmit: h.cfg.Retransmit,
		}
		if h.cfg.IgnorePFC {
			c.PFC = &[8]bool{}
		}
		if h.ib() {
			c.Fabric, c.LID, c.IBDataVLs, c.IBBlocksPerVL = nic.FabricIB, h.cfg.LID, h.cfg.IBDataVLs, h.cfg.IBBlocksPerVL
			var sl2vl [16]uint8
			for sl := range sl2vl {
				sl2vl[sl] = h.slToVL(uint8(sl))
			}
			c.SL2VL = &sl2vl
			c.IBCC, c.Trust, c.DSCP2Prio, c.DCQCN = h.cfg.IBCC, nic.TrustDSCP, nil, nil
			if c.IBCC == nil {
				c.CC = "none"
			}
			if mtu := h.link.Cfg.MTU; mtu > 0 {
				c.PortMTU = mtu // an IB link's MTU is the IB MTU
			}
			if h.managed {
				c.SMA = &nic.SMAConfig{NodeGUID: IBGUID(h.cfg.Name), Description: h.cfg.Name + " HCA-1", IsSM: h.isSM}
			}
		} else if mtu := h.link.Cfg.MTU; mtu > 0 {
			// The largest IB MTU whose RoCE packet (IP 20 + UDP 8 + BTH 12
			// + RETH 16 + payload + ICRC 4) fits the link.
			c.PortMTU = 256
			for m := 4096; m >= 256; m /= 2 {
				if m+60 <= mtu {
					c.PortMTU = m
					break
				}
			}
		}
		n, err := nic.New(c, s, s.pool)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		h.n = n
		n.Attach(h.tx)
	}
	for _, f := range s.rdma {
		if err := f.start(); err != nil {
			return err
		}
	}
	return nil
}

// routeTarget is a node switches route to: a Host or a NIC host.
type routeTarget struct {
	ep   endpoint
	link *Link
	tx   *linkDir
	ip   [4]byte
	lid  uint16
}

// routeTargets lists every end node, hosts first, in insertion order.
func (s *Sim) routeTargets() []routeTarget {
	out := make([]routeTarget, 0, len(s.hosts)+len(s.nics))
	for _, h := range s.hosts {
		out = append(out, routeTarget{ep: h, link: h.link, tx: h.tx, ip: h.cfg.IP, lid: h.cfg.LID})
	}
	for _, h := range s.nics {
		out = append(out, routeTarget{ep: h, link: h.link, tx: h.tx, ip: h.cfg.IP, lid: h.cfg.LID})
	}
	return out
}
