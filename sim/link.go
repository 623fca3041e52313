package sim

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// endpoint is what a link delivers to: a switch or a host.
type endpoint interface {
	// deliver hands f to the node's port at f.HeadAt (now).
	deliver(port int, f *frame.Frame)
	// headBytes is how many bytes the node needs before it acts on a frame
	// (its cut-through header size); 0 means the whole frame.
	headBytes() int
	// linkState tells the node its port's link went down or up.
	linkState(port int, up bool)
	// ib reports whether the node speaks native InfiniBand.
	ib() bool
}

// DropReason is why a link dropped a frame.
type DropReason uint8

const (
	DropLinkDown DropReason = iota // link was down at start or at delivery
	DropMTU                        // frame larger than the link MTU
	DropLoss                       // injected loss
	numLinkDrops
)

func (r DropReason) String() string {
	switch r {
	case DropLinkDown:
		return "link_down"
	case DropMTU:
		return "mtu_exceeded"
	case DropLoss:
		return "injected_loss"
	}
	return "unknown"
}

// LinkStats counts one direction of a link.
type LinkStats struct {
	Frames, Bytes         uint64 // delivered
	DataFrames, DataBytes uint64 // delivered, excluding MAC control and IB link packets
	TxFrames              uint64 // handed to the link
	Corrupted             uint64 // delivered with a flipped byte
	Drops                 [numLinkDrops]uint64
	// Busy is the time every frame handed to the link held it, its
	// serialization and the per-frame wire overhead (wire.Overhead: on
	// Ethernet the preamble, FCS and inter-frame gap), up to the end of
	// the run (or now): Busy / elapsed is the direction's utilisation, at
	// most 1, and 1 on a saturated link.
	Busy clock.Time
	// DataBusy is Busy for data frames only.
	DataBusy clock.Time
	// FirstTx and LastTail bound the period the direction carried frames;
	// FirstDataTx and LastDataTail the same for data frames only.
	FirstTx, LastTail         clock.Time
	FirstDataTx, LastDataTail clock.Time
}

// Link is a full-duplex point-to-point link. Direction 0 carries A -> B,
// direction 1 carries B -> A. Each direction keeps its in-flight frames in a
// FIFO ring with one timer armed for the head: starts are serialized by the
// transmitter, so delivery times are non-decreasing and FIFO order is time
// order.
type Link struct {
	s    *Sim
	Cfg  LinkConfig
	A, B PortRef
	dir  [2]linkDir
	up   bool
	evs  []*timer
}

// linkDir is one direction; it implements switchcore.PortTx (Transmit).
type linkDir struct {
	l       *Link
	to      endpoint
	toPort  int
	from    endpoint
	ring    []*frame.Frame // power-of-two capacity
	head, n int
	timer   *timer
	Stats   LinkStats
	// serEnd is when the link is free of the last frame handed to it
	// (its tail and wire overhead); lastData says whether it was a data
	// frame. Frames are
	// serialized one after the other, so only that frame can still be
	// going out at the end of the run (see stats).
	serEnd   clock.Time
	lastData bool
}

// Up reports whether the link is up.
func (l *Link) Up() bool { return l.up }

// Rate is the link rate in bits per second.
func (l *Link) Rate() uint64 { return l.Cfg.Rate }

// Stats returns direction d's counters so far (0: A -> B, 1: B -> A).
func (l *Link) Stats(d int) LinkStats { return l.dir[d&1].stats(l.s.now) }

// stats returns the counters with Busy and DataBusy cut at now: a frame
// handed to the link just before the end of the run adds only the part of
// its serialization the run saw (a whole frame made a saturated link
// 100.1 % busy).
func (d *linkDir) stats(now clock.Time) LinkStats {
	st := d.Stats
	if over := d.serEnd - now; over > 0 {
		st.Busy -= over
		if d.lastData {
			st.DataBusy -= over
		}
	}
	return st
}

// Transmit starts f on the link now. f.TailAt is the sender's tail time; if
// it is earlier than the serialization allows (or unset) it is corrected to
// now + ser(len). The sender keeps the link for the frame's wire overhead
// after its tail (wire.Overhead); the link counts that time busy. Ownership
// of f passes to the link.
func (d *linkDir) Transmit(f *frame.Frame) {
	l := d.l
	s := l.s
	now := s.now
	n := len(f.Data)
	ser := clock.SerializationTime(n, l.Cfg.Rate)
	occ := clock.SerializationTime(n+wire.Overhead(d.to.ib()), l.Cfg.Rate)
	d.Stats.TxFrames++
	if d.Stats.FirstTx == 0 && d.Stats.TxFrames == 1 {
		d.Stats.FirstTx = now
	}
	d.Stats.Busy += occ
	d.serEnd, d.lastData = now+occ, false
	if f.TailAt < now+ser {
		f.TailAt = now + ser
	}
	if f.TailAt > d.Stats.LastTail {
		d.Stats.LastTail = f.TailAt
	}
	if !isControl(f.Data, d.to.ib()) {
		if d.Stats.LastDataTail == 0 {
			d.Stats.FirstDataTx = now
		}
		d.Stats.LastDataTail = max(d.Stats.LastDataTail, f.TailAt)
		d.Stats.DataBusy += occ
		d.lastData = true
	}
	if !l.up {
		d.drop(f, DropLinkDown)
		return
	}
	if l.Cfg.MTU > 0 && overMTU(f.Data, l.Cfg.MTU, d.to.ib()) {
		d.drop(f, DropMTU)
		return
	}
	if l.Cfg.Loss > 0 && s.rng.Float64() < l.Cfg.Loss {
		d.drop(f, DropLoss)
		return
	}
	if l.Cfg.Corrupt > 0 && s.rng.Float64() < l.Cfg.Corrupt {
		corrupt(f, d.to.ib())
	}
	hb := d.to.headBytes()
	if hb <= 0 || hb > n {
		hb = n
	}
	f.HeadAt = now + l.Cfg.Delay + clock.SerializationTime(hb, l.Cfg.Rate)
	f.TailAt += l.Cfg.Delay
	if f.HeadAt > f.TailAt {
		f.HeadAt = f.TailAt
	}
	d.push(f)
	if d.n == 1 {
		d.timer.Reset(f.HeadAt)
	}
}

func (d *linkDir) drop(f *frame.Frame, r DropReason) {
	d.Stats.Drops[r]++
	f.Put()
}

func (d *linkDir) push(f *frame.Frame) {
	if d.n == len(d.ring) {
		// Grow (warm-up only): double and unwrap.
		nr := make([]*frame.Frame, max(16, 2*len(d.ring)))
		for i := 0; i < d.n; i++ {
			nr[i] = d.ring[(d.head+i)&(len(d.ring)-1)]
		}
		d.ring, d.head = nr, 0
	}
	d.ring[(d.head+d.n)&(len(d.ring)-1)] = f
	d.n++
}

// arrive fires at the head frame's delivery time.
func (d *linkDir) arrive() {
	f := d.ring[d.head]
	d.ring[d.head] = nil
	d.head = (d.head + 1) & (len(d.ring) - 1)
	d.n--
	if d.n > 0 {
		d.timer.Reset(d.ring[d.head].HeadAt)
	}
	if !d.l.up {
		d.drop(f, DropLinkDown)
		return
	}
	d.Stats.Frames++
	d.Stats.Bytes += uint64(len(f.Data))
	if f.Corrupt {
		d.Stats.Corrupted++
	}
	if !isControl(f.Data, d.to.ib()) {
		d.Stats.DataFrames++
		d.Stats.DataBytes += uint64(len(f.Data))
		d.l.s.dataMoved++
	}
	if tap := d.l.s.tap; tap != nil {
		tap(d.l, d.dirIndex(), f)
	}
	d.to.deliver(d.toPort, f)
}

// dirIndex is 0 for A -> B, 1 for B -> A.
func (d *linkDir) dirIndex() int {
	if d == &d.l.dir[0] {
		return 0
	}
	return 1
}

// setUp takes the link down or up and tells both ends.
func (l *Link) setUp(up bool) {
	if l.up == up {
		return
	}
	l.up = up
	l.dir[0].to.linkState(l.dir[0].toPort, up)
	l.dir[1].to.linkState(l.dir[1].toPort, up)
}

// l2HeaderLen returns the Ethernet header length of frame b (14 or 18).
func l2HeaderLen(b []byte) int {
	if len(b) >= 18 && binary.BigEndian.Uint16(b[12:]) == wire.EtherTypeVLAN {
		return 18
	}
	return 14
}

// ibOverhead is the largest IB header/trailer overhead around a payload:
// LRH 8 + GRH 40 + BTH 12 + 28 bytes of extended headers + ICRC 4 + VCRC 2.
const ibOverhead = 94

// overMTU reports whether frame b exceeds an MTU: for Ethernet the L3
// packet (Linux MTU semantics), for IB the payload bound.
func overMTU(b []byte, mtu int, ib bool) bool {
	if ib {
		return len(b) > mtu+ibOverhead
	}
	return len(b)-l2HeaderLen(b) > mtu
}

// isControl reports link-local control frames (PFC/PAUSE, link-state
// advertisements, IB link packets), which do not count as data progress.
func isControl(b []byte, ib bool) bool {
	if ib {
		return len(b) == wire.IBLinkSize
	}
	if len(b) < wire.EthernetSize {
		return false
	}
	switch binary.BigEndian.Uint16(b[12:]) {
	case wire.EtherTypeMACControl:
		return true
	case wire.EtherTypeLinkState:
		// The switches' routing, not data: it must not count as the
		// fabric moving data (the deadlock monitor's progress).
		return wire.MAC(b[0:6]) == wire.LinkStateDst
	}
	return false
}

// corrupt flips the byte a bit error takes (wire.BitErrorIndex, as the
// real-time wire does), so the receiver's real CRC check fails.
func corrupt(f *frame.Frame, ib bool) {
	f.Corrupt = true
	if i := wire.BitErrorIndex(f.Data, ib); i >= 0 {
		f.Data[i] ^= 0xFF
	}
}
