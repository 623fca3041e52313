package sim

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// Host is a simulated end host: traffic sources that send real RoCEv2 (or
// native IB) packets out of its single port, honouring received PFC (or IB
// credits), and a sink that verifies every packet's ICRC (and VCRC) and
// accounts bytes and completion times per flow. The NIC package will replace
// it; until then it is the traffic endpoint of every scenario.
type Host struct {
	s    *Sim
	cfg  HostConfig
	idx  int
	mac  wire.MAC
	tx   *linkDir
	link *Link
	up   bool

	flows     []*flow
	rr        int
	busyUntil clock.Time
	txTimer   *timer // the frame on the wire has left: next opportunity
	wake      *timer // a paced, gated or paused flow becomes eligible

	pausedFrom  [8]clock.Time
	pausedUntil [8]clock.Time
	stormDue    bool
	storm       *timer

	sinks []*sink // by flow id; nil where this host is not a destination

	smi *hostSMI // QP0: subnet management agent and SM (ib_sma.go)
	cc  *hostCC  // IB congestion control (ibcc.go); nil: off

	// Native IB link-level flow control, per VL (IBA §7.9.4).
	fctbs     [16]uint16 // blocks sent
	fccl      [16]uint16 // peer's limit
	fcclKnown [16]bool
	abr       [16]uint16 // adjusted blocks received
	advFCCL   [16]uint16 // limit we last advertised
	advABR    [16]uint16 // ABR when we last advertised
	fcDue     uint16     // VLs with a flow-control packet to send
	fcLast    [16]clock.Time
	fcTimer   *timer
	stalled   [16]bool

	// Scratch for the builders and decoders (kept here so the per-frame
	// path allocates nothing).
	roce  bth.RoCEFields
	ibf   bth.IBFields
	rpkt  bth.Packet
	ibpkt bth.IBPacket

	Stats HostStats
}

// HostStats counts a host's port.
type HostStats struct {
	TxFrames, TxBytes uint64 // everything sent, control included
	RxFrames, RxBytes uint64 // everything received
	// Drops on receive, by reason.
	ICRCErrors  uint64 // RoCE ICRC or IB ICRC mismatch
	VCRCErrors  uint64 // IB VCRC mismatch
	Malformed   uint64 // failed header validation
	UnknownFlow uint64 // BTH DestQP of no flow that ends here
	OutOfOrder  uint64 // PSN other than the expected (loss upstream)
	// PFC, per priority: frames received, XOFFs among them, pause time.
	RxPFC      [8]uint64
	RxXoff     [8]uint64
	PausedTime [8]clock.Time
	TxPFC      uint64 // storm XOFFs sent
	// IB.
	FCTx, FCRx    uint64
	CreditWaits   uint64 // times a ready packet waited for credit (port_xmit_wait analogue)
	CreditOverrun uint64 // blocks received beyond the limit we advertised: must stay 0
	IBCC          IBCCHostStats
}

// sink is one (flow, destination host) receiver.
type sink struct {
	f                *flow
	expPSN           uint32
	havePSN          bool
	rxFrames, rxB    uint64
	rxWire           uint64
	firstRx, lastRx  clock.Time
	messages         int
	gaps             uint64
	ce               uint64 // packets received CE-marked
	lastMsgCompleted clock.Time
}

// AddHost adds a simulated host.
func (s *Sim) AddHost(cfg HostConfig) error {
	h := &Host{s: s, cfg: cfg, idx: len(s.hosts), up: true}
	if err := h.ibccInit(); err != nil {
		return err
	}
	if err := s.addNode(cfg.Name, h); err != nil {
		return err
	}
	if cfg.MAC == ([6]byte{}) {
		h.cfg.MAC = [6]byte{0x02, 0, 0, 0, byte((h.idx + 1) >> 8), byte(h.idx + 1)}
	}
	h.mac = wire.MAC(h.cfg.MAC)
	if cfg.IP == ([4]byte{}) {
		h.cfg.IP = [4]byte{10, 0, byte(h.idx / 256), byte(h.idx%256 + 1)}
	}
	if cfg.LID == 0 {
		h.cfg.LID = uint16(h.idx + 1)
	}
	if h.cfg.IBBlocksPerVL <= 0 {
		h.cfg.IBBlocksPerVL = 1024
	}
	if h.cfg.IBBlocksPerVL > 2048 {
		return fmt.Errorf("sim: host %s: IB buffer of %d blocks exceeds the 2048-block credit window", cfg.Name, h.cfg.IBBlocksPerVL)
	}
	if h.cfg.IBDataVLs <= 0 {
		h.cfg.IBDataVLs = 1
	}
	h.txTimer = s.newTimer(h.kick)
	h.wake = s.newTimer(h.kick)
	s.hosts = append(s.hosts, h)
	return nil
}

// Name is the host's name.
func (h *Host) Name() string { return h.cfg.Name }

// Config is the host's configuration with defaults filled in.
func (h *Host) Config() HostConfig { return h.cfg }

func (h *Host) ib() bool       { return h.cfg.Fabric == FabricIB }
func (h *Host) headBytes() int { return 0 }
func (h *Host) linkState(_ int, up bool) {
	h.up = up
	h.smaLinkState(up)
	if up {
		h.kick()
	}
}

func (h *Host) dscpToPrio(dscp uint8) uint8 {
	if h.cfg.DSCPToPrio != nil {
		return h.cfg.DSCPToPrio[dscp&63] & 7
	}
	return (dscp & 63) >> 3
}

func (h *Host) slToVL(sl uint8) uint8 {
	if h.cfg.IBSL2VL != nil {
		return h.cfg.IBSL2VL[sl&15] % uint8(h.cfg.IBDataVLs)
	}
	return sl % uint8(h.cfg.IBDataVLs)
}

func (h *Host) addSink(f *flow) {
	for len(h.sinks) <= f.id {
		h.sinks = append(h.sinks, nil)
	}
	if h.sinks[f.id] == nil {
		h.sinks[f.id] = &sink{f: f}
	}
}

func (h *Host) start() {
	for len(h.sinks) < len(h.s.flows) {
		h.sinks = append(h.sinks, nil)
	}
	if h.cfg.Storm != nil {
		h.storm = h.s.newTimer(h.stormTick)
		h.storm.Reset(h.cfg.Storm.Start)
	}
	if h.ib() {
		h.fcTimer = h.s.newTimer(h.fcTick)
		for vl := 0; vl < h.cfg.IBDataVLs; vl++ {
			h.advFCCL[vl] = wire.AddBlocks(h.abr[vl], h.cfg.IBBlocksPerVL)
			h.fcDue |= 1 << vl
		}
	}
	h.kick()
}

// kick sends the next frame if the port is idle: control frames first
// (storm XOFF, IB flow control), then data round-robin over the flows
// that are ready, not paused and (IB) have credit. Otherwise it arms the
// wake timer for the earliest time a flow becomes ready.
func (h *Host) kick() {
	now := h.s.now
	if now < h.busyUntil || !h.up {
		return
	}
	if h.stormDue {
		h.stormDue = false
		h.sendStorm()
		return
	}
	if h.fcDue != 0 {
		h.sendFC()
		return
	}
	if h.smpPending() {
		h.sendQueuedSMP()
		return
	}
	if !h.portActive() {
		return // IB port not Active yet: only SMPs may flow (IBA 7.2)
	}
	if h.ccSendCN() {
		return
	}
	n := len(h.flows)
	wake := clock.Never
	for i := 0; i < n; i++ {
		k := h.rr + i
		if k >= n {
			k -= n
		}
		f := h.flows[k]
		t := f.readyAt(now)
		if t == clock.Never {
			continue
		}
		if !h.ib() && !h.cfg.IgnorePFC {
			if pu := h.pausedUntil[f.prio]; pu > t {
				t = pu
			}
		}
		if t > now {
			wake = min(wake, t)
			continue
		}
		if h.ib() && !h.haveCredit(f) {
			continue // an FC packet will kick us
		}
		h.rr = k + 1
		if h.rr == n {
			h.rr = 0
		}
		h.sendData(f)
		return
	}
	if wake != clock.Never {
		h.wake.Reset(wake)
	}
}

// transmit puts fr on the wire now and marks the port busy until its tail
// and the wire overhead after it (wire.Overhead) have left.
func (h *Host) transmit(fr *frame.Frame) {
	now := h.s.now
	n := len(fr.Data)
	fr.TailAt = now + clock.SerializationTime(n, h.link.Cfg.Rate)
	h.busyUntil = now + clock.SerializationTime(n+wire.Overhead(h.ib()), h.link.Cfg.Rate)
	h.Stats.TxFrames++
	h.Stats.TxBytes += uint64(len(fr.Data))
	h.tx.Transmit(fr)
	h.txTimer.Reset(h.busyUntil)
}

// sendData builds and sends the next packet of f.
func (h *Host) sendData(f *flow) {
	now := h.s.now
	payload := min(f.remain, f.pmtu)
	first := f.msgOff == 0
	last := payload == f.remain
	if first {
		f.msgFirst = now
	}
	var fr *frame.Frame
	if h.ib() {
		fr = h.buildIB(f, payload, first, last)
	} else {
		fr = h.buildRoCE(f, payload, first, last)
	}
	fr.Flow = uint32(f.id + 1)
	fr.Priority = f.prio
	fr.Born = f.msgFirst
	fr.Seq = f.msgSeq << 1
	if last {
		fr.Seq |= 1
	}
	wireLen := len(fr.Data)
	if h.ib() {
		h.fctbs[f.vl] = wire.AddBlocks(h.fctbs[f.vl], wire.CreditBlocks(wireLen))
	}
	f.sent(now, wireLen, payload)
	if h.cc != nil {
		h.ccPace(f, now)
	}
	h.transmit(fr)
}

// Queue pair numbers: flow i's sender QP and receiver QP. The sink finds the
// flow from the BTH DestQP, as a NIC would.
const (
	srcQPBase = 0x010000
	dstQPBase = 0x020000
	qKey      = 0x11111111
)

// opcode picks the RDMA WRITE (or UD SEND) opcode of a packet.
func opcode(kind FlowKind, first, last bool) bth.Opcode {
	if kind == UDSend {
		return bth.UDSendOnly
	}
	switch {
	case first && last:
		return bth.RCWriteOnly
	case first:
		return bth.RCWriteFirst
	case last:
		return bth.RCWriteLast
	}
	return bth.RCWriteMiddle
}

// zeroPayload is the message data every source sends: zeros, so runs are
// repeatable byte for byte. The builders copy from it; it is never written.
var zeroPayload [frame.MaxFrame]byte

// transport fills the BTH and extension header fields of f's next packet
// and advances its PSN.
func (f *flow) transport(bf *bth.BTHFields, ext *bth.ExtFields, first, last bool) {
	d := f.dst
	*bf = bth.BTHFields{
		OpCode: opcode(f.cfg.Kind, first, last),
		PKey:   bth.DefaultPKey,
		DestQP: dstQPBase + uint32(f.id),
		AckReq: last && f.cfg.Kind != UDSend,
		PSN:    f.psn[d],
	}
	f.psn[d] = (f.psn[d] + 1) & bth.QPNMask
	ext.RETH = bth.RETHFields{VA: 0x10000000, RKey: uint32(f.id + 1), DMALen: uint32(f.msgLen)}
	ext.DETH = bth.DETHFields{QKey: qKey, SrcQP: srcQPBase + uint32(f.id)}
}

// buildRoCE builds Ethernet [802.1Q] / IPv4 / UDP 4791 / BTH / ext /
// payload / pad / ICRC (padded to the Ethernet minimum) with the bth
// package's builder.
func (h *Host) buildRoCE(f *flow, payload int, first, last bool) *frame.Frame {
	rf := &h.roce
	dstH := f.dsts[f.dst]
	rf.Ethernet = wire.EthernetFields{Dst: dstH.mac, Src: h.mac, Tagged: h.cfg.Tagged, PCP: f.prio, VID: h.cfg.VID}
	rf.Src, rf.Dst = netip.AddrFrom4(h.cfg.IP), netip.AddrFrom4(dstH.cfg.IP)
	rf.DSCP, rf.ECN = f.cfg.DSCP, wire.ECNNotECT
	if f.cfg.ECT {
		rf.ECN = wire.ECNECT0
	}
	f.ipID++
	rf.ID = f.ipID
	rf.SrcPort, rf.SrcQP = f.cfg.SrcPort, srcQPBase+uint32(f.id)
	f.transport(&rf.BTH, &rf.Ext, first, last)
	rf.Payload = zeroPayload[:payload]
	fr := h.s.pool.Get(rf.FrameLen())
	if _, err := bth.EncodeRoCE(fr.Data, rf); err != nil {
		// The fields are ours: an error is a programming error.
		panic(fmt.Sprintf("sim: host %s: building a RoCE frame: %v", h.cfg.Name, err))
	}
	return fr
}

// buildIB builds LRH / BTH / ext / payload / pad / ICRC / VCRC.
func (h *Host) buildIB(f *flow, payload int, first, last bool) *frame.Frame {
	ib := &h.ibf
	dstH := f.dsts[f.dst]
	ib.LRH = wire.LRHFields{VL: f.vl, SL: f.cfg.SL, DLID: dstH.cfg.LID, SLID: h.cfg.LID}
	f.transport(&ib.BTH, &ib.Ext, first, last)
	ib.Payload = zeroPayload[:payload]
	fr := h.s.pool.Get(ib.PacketLen())
	if _, err := bth.EncodeIB(fr.Data, ib); err != nil {
		panic(fmt.Sprintf("sim: host %s: building an IB packet: %v", h.cfg.Name, err))
	}
	return fr
}

// deliver receives a frame (whole: hosts are store-and-forward).
func (h *Host) deliver(_ int, fr *frame.Frame) {
	h.Stats.RxFrames++
	h.Stats.RxBytes += uint64(len(fr.Data))
	if h.ib() {
		h.receiveIB(fr)
	} else {
		h.receiveRoCE(fr)
	}
	fr.Put()
}

func (h *Host) receiveRoCE(fr *frame.Frame) {
	b := fr.Data
	if len(b) >= wire.EthernetSize && binary.BigEndian.Uint16(b[12:]) == wire.EtherTypeMACControl {
		h.receivePFC(b)
		return
	}
	p := &h.rpkt
	if err := p.Decode(b, bth.VerifyICRC); err != nil {
		h.countRxError(err)
		return
	}
	if sk := h.account(fr, &p.Headers, len(b)); sk != nil && wire.IPECN(p.L3()) == wire.ECNCE {
		sk.ce++
	}
}

// countRxError books a decode failure: a checksum mismatch (corruption on
// a link) or anything else (malformed).
func (h *Host) countRxError(err error) {
	if we, ok := err.(*wire.Error); ok && we.Reason == wire.ReasonChecksum {
		if we.Header == "VCRC" {
			h.Stats.VCRCErrors++
		} else {
			h.Stats.ICRCErrors++
		}
		return
	}
	h.Stats.Malformed++
}

// account books a verified transport packet and returns its sink (nil
// if the packet belongs to no flow ending here).
func (h *Host) account(fr *frame.Frame, th *bth.Headers, wireLen int) *sink {
	bt := th.BTH
	id := int(bt.DestQP()) - dstQPBase
	if id < 0 || id >= len(h.sinks) || h.sinks[id] == nil {
		h.Stats.UnknownFlow++
		return nil
	}
	sk := h.sinks[id]
	payload := len(th.Payload)
	now := h.s.now
	if sk.havePSN && bt.PSN() != sk.expPSN {
		h.Stats.OutOfOrder++
		sk.gaps++
	}
	sk.havePSN, sk.expPSN = true, (bt.PSN()+1)&bth.QPNMask
	if sk.rxFrames == 0 {
		sk.firstRx = now
	}
	sk.rxFrames++
	sk.rxB += uint64(payload)
	sk.rxWire += uint64(wireLen)
	sk.lastRx = now
	// The source marks the last packet of a message in the frame's
	// bookkeeping sequence (UD messages span several SEND ONLY packets);
	// Born is the message's first-byte time.
	if fr.Seq&1 == 1 {
		sk.messages++
		sk.lastMsgCompleted = now
		sk.f.fcts = append(sk.f.fcts, now-fr.Born)
	}
	return sk
}

// receivePFC honours a PFC (or PAUSE) frame: quanta count at the link's
// rate from now; XON resumes at once.
func (h *Host) receivePFC(b []byte) {
	var mc wire.MACControl
	if wire.DecodeMACControl(b, &mc) != nil {
		h.Stats.Malformed++
		return
	}
	now := h.s.now
	rate := h.link.Cfg.Rate
	kick := false
	for p := 0; p < 8; p++ {
		if mc.Enable&(1<<p) == 0 {
			continue
		}
		h.Stats.RxPFC[p]++
		if mc.Time[p] > 0 {
			h.Stats.RxXoff[p]++
			if h.pausedUntil[p] <= now {
				h.Stats.PausedTime[p] += h.pausedUntil[p] - h.pausedFrom[p]
				h.pausedFrom[p] = now
			}
			h.pausedUntil[p] = now + wire.QuantaToTime(mc.Time[p], rate)
		} else if h.pausedUntil[p] > now {
			h.pausedUntil[p] = now
			kick = true
		}
	}
	if kick {
		h.kick()
	} else if h.wake.idx < 0 {
		// Paused flows re-evaluate at expiry.
		h.kick()
	}
}

// Paused reports whether the host's priority p is paused now.
func (h *Host) Paused(p int) bool { return h.pausedUntil[p&7] > h.s.now }

// pausedTotal returns the pause time up to now, the open interval included.
func (h *Host) pausedTotal(p int) clock.Time {
	t := h.Stats.PausedTime[p]
	return t + min(h.pausedUntil[p], h.s.now) - h.pausedFrom[p]
}

func (h *Host) stormTick() {
	st := h.cfg.Storm
	now := h.s.now
	if st.Stop > 0 && now >= st.Stop {
		return
	}
	h.stormDue = true
	iv := st.Interval
	if iv <= 0 {
		iv = wire.XoffRefresh(0xFFFF, h.link.Cfg.Rate)
	}
	h.storm.Reset(now + iv)
	h.kick()
}

func (h *Host) sendStorm() {
	fr := h.s.pool.Get(wire.MACControlFrameSize)
	var times [8]uint16
	p := h.cfg.Storm.Priority & 7
	times[p] = 0xFFFF
	wire.EncodePFC(fr.Data, h.mac, 1<<p, &times)
	fr.Note = "pfc storm"
	h.Stats.TxPFC++
	h.transmit(fr)
}

// IB link-level flow control.

func (h *Host) haveCredit(f *flow) bool {
	vl := f.vl
	n := h.nextIBLen(f)
	if h.fcclKnown[vl] && wire.CanSend(h.fccl[vl], h.fctbs[vl], wire.CreditBlocks(n)) {
		h.stalled[vl] = false
		return true
	}
	if !h.stalled[vl] {
		h.stalled[vl] = true
		h.Stats.CreditWaits++
	}
	return false
}

// nextIBLen is the on-link size of f's next IB packet.
func (h *Host) nextIBLen(f *flow) int {
	payload := min(f.remain, f.pmtu)
	op := opcode(f.cfg.Kind, f.msgOff == 0, payload == f.remain)
	return wire.LRHSize + bth.TransportLen(op, payload) + bth.ICRCSize + wire.VCRCSize
}

func (h *Host) receiveIB(fr *frame.Frame) {
	b := fr.Data
	if len(b) == wire.IBLinkSize {
		lp := wire.IBLink(b)
		if lp.Validate(0) != nil {
			h.Stats.Malformed++
			return
		}
		h.Stats.FCRx++
		vl := lp.VL()
		if int(vl) >= 15 {
			return
		}
		h.fccl[vl], h.fcclKnown[vl] = lp.FCCL(), true
		// IBA §7.9.4.3: the receiver resynchronises its ABR to the
		// sender's FCTBS (recovering blocks lost to errors).
		h.abr[vl] = lp.FCTBS()
		h.kick()
		return
	}
	if len(b) < wire.LRHSize {
		h.Stats.Malformed++
		return
	}
	if wire.LRH(b).VL() == 15 {
		h.receiveSMP(fr) // QP0, not flow-controlled (ib_sma.go)
		return
	}
	// The packet used receive buffer whatever its content: account the
	// credits first.
	if vl := wire.LRH(b).VL(); vl < 15 {
		blocks := wire.CreditBlocks(len(b))
		if !wire.CanSend(h.advFCCL[vl], h.abr[vl], blocks) {
			h.Stats.CreditOverrun++
		}
		h.abr[vl] = wire.AddBlocks(h.abr[vl], blocks)
		// The host consumes at once: grant the space back.
		h.queueFC(vl)
	}
	if h.ccReceiveCN(b) {
		return
	}
	p := &h.ibpkt
	if err := p.Decode(b, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
		h.countRxError(err)
		return
	}
	if sk := h.account(fr, &p.Headers, len(b)); sk != nil && p.BTH.FECN() {
		h.ccFECN(sk.f, p.LRH)
	}
}

// creditUpdate is the least interval between flow-control packets of one
// VL triggered by receptions; the periodic refresh keeps credits alive if
// one is lost.
const (
	creditUpdate  = clock.Microsecond
	creditRefresh = 64 * clock.Microsecond
)

func (h *Host) queueFC(vl uint8) {
	now := h.s.now
	if now-h.fcLast[vl] >= creditUpdate {
		h.fcDue |= 1 << vl
		h.kick()
		return
	}
	at := h.fcLast[vl] + creditUpdate
	if w, ok := h.fcTimer.When(); !ok || w > at {
		h.fcTimer.Reset(at)
	}
}

func (h *Host) fcTick() {
	now := h.s.now
	next := clock.Never
	for vl := 0; vl < h.cfg.IBDataVLs; vl++ {
		due := h.abr[vl] != h.advABR[vl] || now-h.fcLast[vl] >= creditRefresh
		if due {
			h.fcDue |= 1 << vl
		} else {
			next = min(next, h.fcLast[vl]+creditRefresh)
		}
	}
	if next != clock.Never {
		h.fcTimer.Reset(next)
	}
	h.kick()
}

// sendFC sends one flow-control packet for the lowest VL due.
func (h *Host) sendFC() {
	vl := 0
	for h.fcDue&(1<<vl) == 0 {
		vl++
	}
	h.fcDue &^= 1 << vl
	now := h.s.now
	h.fcLast[vl] = now
	h.advFCCL[vl] = wire.AddBlocks(h.abr[vl], h.cfg.IBBlocksPerVL)
	h.advABR[vl] = h.abr[vl]
	fr := h.s.pool.Get(wire.IBLinkSize)
	wire.IBLink(fr.Data).Encode(&wire.IBLinkFields{
		Op: wire.IBLinkOpNormal, FCTBS: h.fctbs[vl], VL: uint8(vl), FCCL: h.advFCCL[vl],
	})
	h.Stats.FCTx++
	h.transmit(fr)
	if _, ok := h.fcTimer.When(); !ok {
		h.fcTimer.Reset(now + creditRefresh)
	}
}
