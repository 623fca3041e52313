package mad

import "github.com/emufabric/emufabric/wire"

// Agent is the Subnet Management Agent of one node (IBA 14.2.1, 14.2.2):
// it answers Get and Set of the node's attributes and moves directed-route
// SMPs along their path. It is I/O-free: Handle takes an SMP (in place)
// and says what to send where; the owner (a switch, a host) builds the
// packet, applies changes the Set made (LID, port states, LFT) by reading
// the agent, and feeds link changes in with SetLinkUp.
//
// Modelled: NodeInfo, NodeDescription, PortInfo (LID, MasterSMLID, LMC,
// port state machine Down/Init/Armed/Active, physical state, MTU, width,
// speed), SwitchInfo (LinearFDBCap/Top, PortStateChange) and the
// LinearForwardingTable. Not modelled: M_Key protection (keys are 0 and
// never checked), P_Key tables, SL-to-VL and VL arbitration attributes,
// multicast forwarding, traps (the SM polls SwitchInfo.PortStateChange
// instead, see package sm).
type Agent struct {
	cfg   AgentConfig
	ports []agentPort // index = IBA port number; switch port 0 = management port
	lft   []uint8     // switch: LID -> port, LFTNoPort when unset
	top   uint16      // switch: LinearFDBTop
	psc   bool        // switch: SwitchInfo.PortStateChange
	Stats AgentStats
}

// AgentConfig describes the node an agent manages.
type AgentConfig struct {
	NodeType     uint8 // NodeTypeCA or NodeTypeSwitch
	NumPorts     int   // external ports: 1..NumPorts
	NodeGUID     uint64
	SysImageGUID uint64 // zero: NodeGUID
	// PortGUID returns port p's GUID; nil: NodeGUID for a switch (one GUID
	// for the switch, IBA 4.1.1), NodeGUID + p for a CA.
	PortGUID    func(p int) uint64
	Description string
	VendorID    uint32 // 24 bits
	DeviceID    uint16
	Revision    uint32
	// LinearFDBCap is the switch's LFT size in entries (zero: 49152, the
	// unicast LID space).
	LinearFDBCap uint16
	// Link properties PortInfo reports, the same for every port (zero:
	// 4X, QDR, no extended speed, MTU 4096) unless PortLink is set.
	Width, Speed, SpeedExt, MTUCap uint8
	// PortLink, when set, gives port p's width, speed and extended speed
	// (as LinkFor returns them), for nodes whose ports differ.
	PortLink func(p int) (width, speed, speedExt uint8)
	// CapabilityMask of the ports (IsSM for the node an SM runs on).
	CapabilityMask uint32
}

type agentPort struct {
	lid, smLID  uint16
	lmc, smSL   uint8
	state       uint8
	up          bool
	neighborMTU uint8
	subnetTO    uint8
	opVLs       uint8
}

// AgentStats counts what the agent did, by outcome.
type AgentStats struct {
	Answered  uint64 // requests answered (including error statuses)
	Forwarded uint64 // directed-route SMPs passed to the next hop
	ToSM      uint64 // responses handed to the local SM
	Malformed uint64 // failed SMP validation
	Discarded uint64 // broke a directed-route hop rule (IBA C14-9, C14-13)
	Unsupp    uint64 // LID-routed legs of directed-route SMPs, traps, unknown methods
}

// Verdict is what the owner does with an SMP after Handle.
type Verdict uint8

const (
	// Drop: nothing to send (counted in Stats).
	Drop Verdict = iota
	// SendPort: send the (rewritten) SMP out Action.Port as a directed-route
	// packet (permissive LRH DLID).
	SendPort
	// SendLID: send the response LID-routed to the requester (LRH DLID =
	// the request's SLID).
	SendLID
	// DeliverSM: a response for the SM on this node.
	DeliverSM
)

// Change bits report what a Set modified, so the owner can apply it.
type Change uint8

const (
	ChangeLID       Change = 1 << iota // a port's LID / LMC
	ChangePortState                    // a port's logical state
	ChangeLFT                          // the LFT or LinearFDBTop
)

// Action is Handle's result.
type Action struct {
	Verdict Verdict
	Port    int // SendPort: the IBA port number
	Changed Change
}

// AddressFromHCA addresses the LRH of an SMP that an HCA port's agent
// sends for a SendPort or SendLID verdict, and reports false for any other
// verdict. An HCA forwards no directed-route SMP, so whatever it sends is
// its own response: it comes from the port's LID (the permissive LID while
// it has none, IBA 14.2.2.1), and a LID-routed response goes back to the
// request's SLID. (A switch's agent keeps the SLID of a directed-route SMP
// it forwards; switchcore addresses its own.)
func (a Action) AddressFromHCA(lrh wire.LRH, lid uint16) bool {
	switch a.Verdict {
	case SendPort:
	case SendLID:
		lrh.SetDLID(LIDOrPermissive(lrh.SLID()))
	default:
		return false
	}
	lrh.SetSLID(LIDOrPermissive(lid))
	return true
}

// NewAgent returns an agent with every port's link down and no LID.
func NewAgent(cfg AgentConfig) *Agent {
	if cfg.SysImageGUID == 0 {
		cfg.SysImageGUID = cfg.NodeGUID
	}
	if cfg.LinearFDBCap == 0 {
		cfg.LinearFDBCap = 0xC000
	}
	if cfg.Width == 0 {
		cfg.Width = Width4X
	}
	if cfg.Speed == 0 {
		cfg.Speed = SpeedQDR
	}
	if cfg.MTUCap == 0 {
		cfg.MTUCap = MTU4096
	}
	a := &Agent{cfg: cfg, ports: make([]agentPort, cfg.NumPorts+1)}
	for i := range a.ports {
		a.ports[i] = agentPort{state: PortStateDown, neighborMTU: cfg.MTUCap, opVLs: 1}
	}
	if a.isSwitch() {
		// Base port 0 is the switch's SMA itself: always physically up,
		// it starts in Init like any port that has a link.
		a.ports[0].up, a.ports[0].state = true, PortStateInit
		a.lft = make([]uint8, cfg.LinearFDBCap)
		for i := range a.lft {
			a.lft[i] = LFTNoPort
		}
	}
	return a
}

func (a *Agent) isSwitch() bool { return a.cfg.NodeType == NodeTypeSwitch }

// Config returns the agent's configuration with defaults applied.
func (a *Agent) Config() AgentConfig { return a.cfg }

// NumPorts is the number of external ports.
func (a *Agent) NumPorts() int { return a.cfg.NumPorts }

// lidPort is the port whose PortInfo holds the node's LID: 0 on a switch,
// 1 on a CA (a one-port CA; multi-port CAs have a LID per port).
func (a *Agent) lidPort() int {
	if a.isSwitch() {
		return 0
	}
	return 1
}

// LID is the node's LID (switch port 0, or CA port 1); 0 until assigned.
func (a *Agent) LID() uint16 { return a.ports[a.lidPort()].lid }

// PortLID returns port p's LID (CA ports; a switch's external ports have none).
func (a *Agent) PortLID(p int) uint16 { return a.ports[p].lid }

// SetLID gives the node its LID before any SM has set one, as a node of a
// subnet that an SM already configured reports it: an SM that meets the
// node keeps a valid, free reported LID (OpenSM's takeover of a running
// subnet), so the node stays where static configuration put it.
func (a *Agent) SetLID(lid uint16) { a.ports[a.lidPort()].lid = lid }

// SMLID is the master SM's LID as set by the SM.
func (a *Agent) SMLID() uint16 { return a.ports[a.lidPort()].smLID }

// PortState returns port p's logical state.
func (a *Agent) PortState(p int) uint8 { return a.ports[p].state }

// LinkUp reports port p's physical link.
func (a *Agent) LinkUp(p int) bool { return a.ports[p].up }

// SetLinkUp reports a physical link change on external port p: up moves
// the port to Init (LinkUp), down to Down (Polling), and a switch raises
// SwitchInfo.PortStateChange. It returns true if the state changed.
func (a *Agent) SetLinkUp(p int, up bool) bool {
	if p < 1 || p > a.cfg.NumPorts {
		return false
	}
	ps := &a.ports[p]
	if ps.up == up {
		return false
	}
	ps.up = up
	if up {
		ps.state = PortStateInit
	} else {
		ps.state = PortStateDown
	}
	if a.isSwitch() {
		a.psc = true
	}
	return true
}

// PortStateChange reports a switch's SwitchInfo.PortStateChange: a port
// changed state since an SM last cleared it.
func (a *Agent) PortStateChange() bool { return a.psc }

// ClearPortStateChange clears it, as an SM's Set(SwitchInfo) with
// PortStateChange 1 does.
func (a *Agent) ClearPortStateChange() { a.psc = false }

// LFTPort returns the switch's output port for lid: an IBA port number,
// 0 for the switch itself, or LFTNoPort (no entry, or above
// LinearFDBTop).
func (a *Agent) LFTPort(lid uint16) uint8 {
	if !a.isSwitch() || int(lid) >= len(a.lft) || lid > a.top {
		return LFTNoPort
	}
	return a.lft[lid]
}

// LinearFDBTop is the highest valid LFT index.
func (a *Agent) LinearFDBTop() uint16 { return a.top }

// Handle processes smp, which arrived on port inPort (IBA numbering), in
// place: a request becomes its response. lidMatch tells whether a
// LID-routed SMP was addressed to this node (the owner compared the LRH
// DLID with the node's LID); a LID-routed SMP that is not is dropped.
func (a *Agent) Handle(inPort int, smp SMP, lidMatch bool) Action {
	if smp.Validate(0) != nil {
		a.Stats.Malformed++
		return Action{}
	}
	if !smp.Directed() {
		if !lidMatch {
			a.Stats.Discarded++
			return Action{}
		}
		if smp.MAD().IsResponse() {
			a.Stats.ToSM++
			return Action{Verdict: DeliverSM}
		}
		ch, ok := a.request(inPort, smp)
		if !ok {
			return Action{}
		}
		return Action{Verdict: SendLID, Changed: ch}
	}
	v, out := DRReceive(smp, inPort, a.isSwitch(), a.cfg.NumPorts)
	switch v {
	case DRForward:
		a.Stats.Forwarded++
		return Action{Verdict: SendPort, Port: out}
	case DRLocal:
	case DRUnsupported:
		a.Stats.Unsupp++
		return Action{}
	default:
		a.Stats.Discarded++
		return Action{}
	}
	if smp.Direction() {
		a.Stats.ToSM++
		return Action{Verdict: DeliverSM}
	}
	ch, ok := a.request(inPort, smp)
	if !ok {
		return Action{}
	}
	out = DRTurn(smp)
	if out == 0 {
		// hc == 0: our own SM asked our own SMA.
		a.Stats.ToSM++
		return Action{Verdict: DeliverSM, Changed: ch}
	}
	return Action{Verdict: SendPort, Port: out, Changed: ch}
}

// request answers a Get or Set in place (method GetResp, status) and
// reports what a Set changed; false means drop (traps, responses, unknown
// methods that need no answer).
func (a *Agent) request(inPort int, smp SMP) (Change, bool) {
	m := smp.MAD()
	var ch Change
	var st uint16
	switch m.Method() {
	case MethodGet, MethodSet:
		ch, st = a.attribute(inPort, smp, m.Method() == MethodSet)
	case MethodTrapRepress, MethodTrap, MethodGetResp:
		a.Stats.Unsupp++
		return 0, false
	default:
		st = StatusMethodUnsupp
	}
	m.SetMethod(MethodGetResp)
	smp.SetStatus(st)
	a.Stats.Answered++
	return ch, true
}

func (a *Agent) attribute(inPort int, smp SMP, set bool) (Change, uint16) {
	m := smp.MAD()
	data := smp.Data()
	am := m.AttributeModifier()
	switch m.AttributeID() {
	case AttrNodeInfo:
		if set {
			return 0, StatusMethodAttrUnsupp
		}
		a.nodeInfo(NodeInfo(data), inPort)
	case AttrNodeDescription:
		if set {
			return 0, StatusMethodAttrUnsupp
		}
		NodeDescription(data).Encode(a.cfg.Description)
	case AttrPortInfo:
		p := int(am)
		if !a.isSwitch() && p == 0 {
			p = inPort // CAs: the port the SMP arrived on
		}
		if p < 0 || p > a.cfg.NumPorts || (!a.isSwitch() && p == 0) {
			clear(data)
			return 0, StatusInvalidField
		}
		var ch Change
		if set {
			var st uint16
			ch, st = a.setPortInfo(p, PortInfo(data))
			if st != 0 {
				a.portInfo(PortInfo(data), p)
				return 0, st
			}
		}
		a.portInfo(PortInfo(data), p)
		return ch, 0
	case AttrSwitchInfo:
		if !a.isSwitch() {
			return 0, StatusMethodAttrUnsupp
		}
		var ch Change
		if set {
			si := SwitchInfo(data)
			if top := si.LinearFDBTop(); top >= a.cfg.LinearFDBCap {
				a.switchInfo(SwitchInfo(data))
				return 0, StatusInvalidField
			} else if top != a.top {
				a.top, ch = top, ChangeLFT
			}
			if si.PortStateChange() {
				a.psc = false // write 1 to clear
			}
		}
		a.switchInfo(SwitchInfo(data))
		return ch, 0
	case AttrLinearFwdTable:
		if !a.isSwitch() {
			return 0, StatusMethodAttrUnsupp
		}
		base := int(am) * LFTBlockSize
		if am > 0xFFFF || base+LFTBlockSize > len(a.lft) {
			clear(data)
			return 0, StatusInvalidField
		}
		var ch Change
		if set {
			copy(a.lft[base:base+LFTBlockSize], data)
			ch = ChangeLFT
		}
		copy(data, a.lft[base:base+LFTBlockSize])
		return ch, 0
	default:
		return 0, StatusMethodAttrUnsupp
	}
	return 0, 0
}

func (a *Agent) nodeInfo(b NodeInfo, inPort int) {
	clear(b[:DataSize])
	b.Encode(&NodeInfoFields{
		BaseVersion: BaseVersion, ClassVersion: SMPClassVersion, NodeType: a.cfg.NodeType,
		NumPorts: uint8(a.cfg.NumPorts), SystemImageGUID: a.cfg.SysImageGUID, NodeGUID: a.cfg.NodeGUID,
		PortGUID: a.portGUID(inPort), PartitionCap: 1, DeviceID: a.cfg.DeviceID, Revision: a.cfg.Revision,
		LocalPortNum: uint8(inPort), VendorID: a.cfg.VendorID,
	})
}

func (a *Agent) portGUID(p int) uint64 {
	if a.cfg.PortGUID != nil {
		return a.cfg.PortGUID(p)
	}
	if a.isSwitch() {
		return a.cfg.NodeGUID
	}
	return a.cfg.NodeGUID + uint64(p)
}

// PortGUID returns port p's GUID.
func (a *Agent) PortGUID(p int) uint64 { return a.portGUID(p) }

func (a *Agent) portInfo(b PortInfo, p int) {
	ps := &a.ports[p]
	width, speed, ext := a.cfg.Width, a.cfg.Speed, a.cfg.SpeedExt
	if a.cfg.PortLink != nil && p > 0 {
		width, speed, ext = a.cfg.PortLink(p)
	}
	f := PortInfoFields{
		GIDPrefix: 0xFE80000000000000, LID: ps.lid, MasterSMLID: ps.smLID,
		CapabilityMask: a.cfg.CapabilityMask, LocalPortNum: uint8(p),
		// Supported/Enabled are sets that always include the slower
		// widths and speeds (IBA 14.2.5.6: 4X-capable = 1x or 4x = 3,
		// QDR-capable = SDR/DDR/QDR = 7); Active is one value.
		LinkWidthEnabled: upTo(width), LinkWidthSupported: upTo(width),
		LinkSpeedSupported: upTo(speed), LinkSpeedEnabled: upTo(speed),
		LinkSpeedExtSupp: upTo(ext), LinkSpeedExtEnable: upTo(ext),
		PortState: ps.state, LinkDownDefault: PhysStatePolling,
		LMC: ps.lmc, MasterSMSL: ps.smSL, VLCap: 1, VLArbHighCap: 8, VLArbLowCap: 8,
		MTUCap: a.cfg.MTUCap, NeighborMTU: ps.neighborMTU, OperationalVLs: ps.opVLs, SubnetTimeOut: ps.subnetTO,
		PhysState: PhysStatePolling,
	}
	if ps.up {
		f.PhysState = PhysStateLinkUp
		f.LinkWidthActive, f.LinkSpeedActive, f.LinkSpeedExtActive = width, speed, ext
	}
	if a.isSwitch() && p != 0 {
		// External switch ports have no LID and no SM address (IBA 14.2.5.6).
		f.LID, f.MasterSMLID, f.LMC = 0, 0, 0
	}
	if a.isSwitch() && p == 0 {
		// Base port 0 has no physical link; width/speed mirror the ports.
		f.PhysState = PhysStateNoChange
	}
	b.Encode(&f)
}

// setPortInfo applies a Set(PortInfo) to port p. State changes follow the
// IBA port state machine (14.2.5.6, Table 148): Set Armed from Init, Set
// Active from Armed, Set Down from any state with a link (the link
// retrains, which here means it comes back in Init at once); anything
// else is an invalid field and changes nothing.
func (a *Agent) setPortInfo(p int, in PortInfo) (Change, uint16) {
	if in.Validate(0) != nil {
		return 0, StatusInvalidField
	}
	ps := &a.ports[p]
	next := ps.state
	switch want := in.PortState(); want {
	case PortStateNoChange:
	case PortStateDown:
		if ps.up {
			next = PortStateInit
		}
	case PortStateArmed:
		if ps.state != PortStateInit && ps.state != PortStateArmed {
			return 0, StatusInvalidField
		}
		next = PortStateArmed
	case PortStateActive:
		if ps.state != PortStateArmed && ps.state != PortStateActive {
			return 0, StatusInvalidField
		}
		next = PortStateActive
	default:
		return 0, StatusInvalidField
	}
	if m := in.NeighborMTU(); m != 0 && m > a.cfg.MTUCap {
		return 0, StatusInvalidField
	}
	var ch Change
	if !a.isSwitch() || p == 0 {
		lid, lmc := in.LID(), in.LMC()
		if lid >= 0xC000 && lid != 0 {
			return 0, StatusInvalidField // multicast or permissive: not a port LID
		}
		if lid != ps.lid || lmc != ps.lmc {
			ch |= ChangeLID
		}
		ps.lid, ps.lmc = lid, lmc
		ps.smLID, ps.smSL, ps.subnetTO = in.MasterSMLID(), in.MasterSMSL(), in.SubnetTimeOut()
	}
	if m := in.NeighborMTU(); m != 0 {
		ps.neighborMTU = m
	}
	if v := in.OperationalVLs(); v != 0 {
		ps.opVLs = v
	}
	if next != ps.state {
		ps.state = next
		ch |= ChangePortState
	}
	return ch, 0
}

func (a *Agent) switchInfo(b SwitchInfo) {
	clear(b[:DataSize])
	b.Encode(&SwitchInfoFields{
		LinearFDBCap: a.cfg.LinearFDBCap, LinearFDBTop: a.top, DefaultPort: 0,
		LifeTimeValue: 18, PortStateChange: a.psc, LIDsPerPort: 1, EnhancedPort0: false,
	})
}

// upTo is the supported/enabled set of a one-bit width or speed code:
// that bit and every lower one.
func upTo(v uint8) uint8 {
	if v == 0 {
		return 0
	}
	return v<<1 - 1
}
