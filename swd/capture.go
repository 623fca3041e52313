package swd

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/internal/capqueue"
	"github.com/emufabric/emufabric/switchcore"
	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

// Live capture. A capture client names ports; each becomes one pcapng
// interface ("sw1:p1"). Frames are recorded where the switch port meets
// its wire: "rx" as they arrive from the peer (before the engine looks at
// them), "tx" as the engine starts them. Each record's comment says the
// direction and what the emulator decided about the frame, from the
// engine's trace hook: ECN CE marks with the queue depth, drops with
// their reason, the XOFF/XON a frame triggered, received and sent PFC, and
// the emulated wire's losses. Frames the engine drops after admission
// (at the egress queue) are recorded on the egress port with the reason.
//
// Records are copied on the loop goroutine and handed to the client's
// writer goroutine through a bounded channel; a client that cannot keep
// up loses records (counted as capture_drop), never slows the switch.
// The next record of the same port that gets through says how many went
// before it; the capture's end (the client half-closes its connection,
// or the daemon stops) writes the records still queued and then one
// pcapng Interface Statistics Block per port, whose isb_ifdrop is every
// record of that port this capture lost (those after its last record
// too) and isb_ifrecv every record it was offered.
//
// An IB switch's ports are pcapng interfaces of link type 197 (ERF), as
// `emulab sim --capture` and Mellanox's ibdump write IB: a data packet
// (LRH through VCRC) is an ERF record of type 21, a 6-byte link
// (flow-control) packet one of type 25. The ERF header's interface number
// repeats the direction for Wireshark's erf.flags.cap: 0 received by the
// switch port, 1 sent by it. Wireshark 4.0's infiniband_link dissector
// reads more than the 6 bytes of a link packet and shows a correct one
// as Malformed; a capture request with "pad_links": true writes each link
// packet zero-padded to 64 bytes (ERF wlen 64, the real 6 bytes first),
// as `emulab sim --capture-pad-links` does.

type capDir uint8

const (
	dirRx capDir = iota
	dirTx
)

func (d capDir) String() string {
	if d == dirRx {
		return "rx"
	}
	return "tx"
}

// captureQueue is how many records may wait for a client's writer;
// controlQueue how many records that show what the switch decided besides
// them: MAC Control frames (PFC, PAUSE) and frames with a note (the
// frame that triggered an XOFF, an ECN mark, a drop, a credit stall). A
// client too slow for the data (a full queue drops records, counted as
// capture_drop) still sees those, since they are what a capture of a
// lossless fabric is read for, and they come exactly when queues fill and
// a capture falls behind. They take their own queue only when the main
// one is full, and may then be written before plain frames that preceded
// them (the timestamps stay right); a client that keeps up gets every
// record in order.
const (
	captureQueue = 4096
	controlQueue = 1024
)

type capRecord struct {
	iface   int
	dir     capDir
	ts      time.Time
	data    []byte
	comment string
	dropped uint64 // records of this port lost to this client just before this one
}

// captureSub is one capture client. ifaces maps switch port index to
// pcapng interface ID.
type captureSub struct {
	ifaces map[int]int
	q      *capqueue.Queues[capRecord] // data, and control frames (controlQueue)
	// dropped counts, per port index, records lost since the last one
	// this client got (loop goroutine): the next one says so in its
	// comment, as an emunic's capture does, so a gap is visible in the
	// file and not only in capture_drop.
	dropped map[int]uint64
	closed  bool // loop goroutine: unsubscribed, q closed
	// padLinks pads IB link packets to 64 bytes (see above), in pad
	// (the writer's).
	padLinks bool
	pad      [capture.IBLinkPadSize]byte
	// recv and drops count, per pcapng interface, the records offered to
	// this client and those it lost, for the statistics blocks at the
	// end. Written on the loop, read by the writer when the capture ends.
	recv, drops []atomic.Uint64
	start       time.Time
}

// newCaptureSub is a capture of the ports with indexes ports, in that
// order of pcapng interfaces.
func newCaptureSub(ports []int, padLinks bool) *captureSub {
	return newCaptureSubQueues(ports, padLinks, captureQueue, controlQueue)
}

// newCaptureSubQueues is newCaptureSub with queues of the given depths.
func newCaptureSubQueues(ports []int, padLinks bool, data, ctl int) *captureSub {
	s := &captureSub{ifaces: make(map[int]int, len(ports)), q: capqueue.New(data, ctl, func(r *capRecord) time.Time { return r.ts }),
		padLinks: padLinks, dropped: make(map[int]uint64, len(ports)),
		recv: make([]atomic.Uint64, len(ports)), drops: make([]atomic.Uint64, len(ports)), start: time.Now()}
	for i, idx := range ports {
		s.ifaces[idx] = i
	}
	return s
}

// capture records data on every capture of p. Loop goroutine. Records
// made while the engine handles a received frame (its cut-through
// transmission, a drop) are held until that frame's own rx record is out,
// so a capture shows cause before effect.
func (d *Daemon) capture(p *swPort, dir capDir, data []byte, note string) {
	c := dir.String()
	if note != "" {
		c += ": " + note
	}
	data = append([]byte(nil), data...)
	if d.cur != nil {
		d.held = append(d.held, heldRecord{p, dir, data, c})
		return
	}
	d.emit(p, dir, data, c, time.Now())
}

type heldRecord struct {
	p       *swPort
	dir     capDir
	data    []byte
	comment string
}

func (d *Daemon) emit(p *swPort, dir capDir, data []byte, comment string, ts time.Time) {
	// Control frames (PFC, advertisements; IB flow control) have a queue of
	// their own, which data does not fill: noted data frames (an ECN mark)
	// filled it and crowded out the PFC frames, every XON of an incast.
	important := !d.ib && (isMACControl(data) || isLinkState(data)) || d.ib && isIBLink(data)
	for _, s := range p.caps {
		r := capRecord{iface: s.ifaces[p.idx], dir: dir, ts: ts, data: data, comment: comment, dropped: s.dropped[p.idx]}
		s.recv[r.iface].Add(1)
		if s.q.Offer(r, important) {
			s.dropped[p.idx] = 0
			continue
		}
		s.dropped[p.idx]++
		s.drops[r.iface].Add(1)
		p.st.CaptureDrops++
	}
}

// receiveCaptured is Receive with the frame recorded as it arrived and
// annotated with what the engine did with it during the call.
func (d *Daemon) receiveCaptured(p *swPort, f *frame.Frame) {
	var data []byte
	if len(p.caps) > 0 {
		data = append([]byte(nil), f.Data...)
	}
	switch {
	case d.ib && isIBLink(f.Data):
		d.curNote = wire.IBLinkNote(f.Data, "received")
	case !d.ib && isMACControl(f.Data):
		d.curNote = pfcNote(f.Data, "received")
	case !d.ib && isLinkState(f.Data):
		d.curNote = linkStateNote(f.Data, "received")
	}
	// Stamped as it arrived, before the engine handles it: the frames it
	// sends on at once (cut-through) are stamped so too. Stamped after,
	// they read as sent up to 180 us after the next hop received them.
	var ts time.Time
	if d.capturing {
		ts = time.Now()
	}
	d.cur = f
	d.sw.Receive(p.idx, f)
	d.cur = nil
	note := d.curNote
	d.curNote = ""
	if data != nil {
		c := "rx"
		if note != "" {
			c += ": " + note
		}
		d.emit(p, dirRx, data, c, ts)
	}
	for i, h := range d.held {
		d.emit(h.p, h.dir, h.data, h.comment, ts)
		d.held[i] = heldRecord{}
	}
	d.held = d.held[:0]
}

// trace is the engine's trace hook (switchcore.SetTrace). It only
// annotates while a capture runs.
func (d *Daemon) trace(ev switchcore.TraceEvent) {
	if !d.capturing {
		return
	}
	pname := d.ports[ev.Port].name
	switch ev.Kind {
	case switchcore.TraceCreditStall:
		if d.cur != nil {
			d.curNote = joinNote(d.curNote, fmt.Sprintf("%s VL %d out of credit: held until the peer grants more", pname, ev.Prio))
		}
	case switchcore.TraceFECNMark:
		if ev.Frame != nil {
			ev.Frame.Note = joinNote(ev.Frame.Note, fmt.Sprintf("FECN marked at %s VL %d depth %d bytes", pname, ev.Prio, ev.Bytes))
		}
	case switchcore.TraceECNMark:
		if ev.Frame != nil {
			ev.Frame.Note = joinNote(ev.Frame.Note, fmt.Sprintf("ECN CE marked at %s queue %d depth %d bytes", pname, ev.Prio, ev.Bytes))
		}
	case switchcore.TraceDrop:
		note := fmt.Sprintf("dropped at %s: %s", pname, ev.Reason)
		if ev.Prio >= 0 {
			note += fmt.Sprintf(" (priority %d)", ev.Prio)
		}
		switch {
		case ev.Frame != nil && ev.Frame == d.cur:
			d.curNote = joinNote(d.curNote, note)
		case ev.Frame != nil:
			if p := d.ports[ev.Port]; len(p.caps) > 0 {
				d.capture(p, dirTx, ev.Frame.Data, note+" (not sent)")
			}
		}
	case switchcore.TraceXoff, switchcore.TraceXon:
		what := "XOFF"
		if ev.Kind == switchcore.TraceXon {
			what = "XON"
		}
		why := fmt.Sprintf("%s sent on %s for PG %d at %d bytes", what, pname, ev.Prio, ev.Bytes)
		if d.cur != nil {
			d.curNote = joinNote(d.curNote, why) // the frame that filled the PG
		}
		if ev.Frame != nil {
			// The PFC frame itself says why: an XON is sent as a frame
			// leaves, when no arriving frame is there to carry the note.
			ev.Frame.Note = joinNote(ev.Frame.Note, why)
		}
	case switchcore.TraceXoffRefresh:
		if ev.Frame != nil {
			ev.Frame.Note = joinNote(ev.Frame.Note, pfcRefreshNote(ev.Frame.Data, pname))
		}
	case switchcore.TracePauseRx:
		if d.cur != nil {
			d.curNote = joinNote(d.curNote, fmt.Sprintf("paused %s priority %d for %d quanta", pname, ev.Prio, ev.Quanta))
		}
	case switchcore.TraceResumeRx:
		if d.cur != nil {
			d.curNote = joinNote(d.curNote, fmt.Sprintf("resumed %s priority %d", pname, ev.Prio))
		}
	case switchcore.TraceHeadroomOverflow:
		if ev.Frame != nil && ev.Frame == d.cur {
			if d.ib {
				d.curNote = joinNote(d.curNote, fmt.Sprintf("the peer sent beyond the credit %s advertised on VL %d (%d blocks over; kept, IB never drops)", pname, ev.Prio, ev.Bytes))
			} else {
				d.curNote = joinNote(d.curNote, fmt.Sprintf("lossless PG %d admitted beyond its xoff headroom on %s (the peer kept sending after XOFF: headroom too small for the link, or the XOFF late)", ev.Prio, pname))
			}
		}
	case switchcore.TracePFCWDStorm, switchcore.TracePFCWDRestore:
		if d.cur != nil {
			d.curNote = joinNote(d.curNote, fmt.Sprintf("PFC watchdog %s on %s priority %d", ev.Kind, pname, ev.Prio))
		}
	}
}

// pfcRefreshNote says why a refreshed XOFF (the engine's
// TraceXoffRefresh) went: the priorities still paused, re-sent every
// half quanta time while their PGs stay above XON (switchcore/pfc.go
// refreshXoff), so the peer's pause never expires. They are most PFC
// frames of a long incast. "" for a frame that pauses nothing.
func pfcRefreshNote(b []byte, pname string) string {
	var mc wire.MACControl
	if wire.DecodeMACControl(b, &mc) != nil || mc.Opcode == wire.MACControlOpPause {
		return ""
	}
	var prios []string
	for prio := range 8 {
		if mc.Enable&(1<<prio) != 0 && mc.Time[prio] != 0 {
			prios = append(prios, strconv.Itoa(prio))
		}
	}
	if len(prios) == 0 {
		return ""
	}
	if len(prios) == 1 {
		return fmt.Sprintf("XOFF refreshed on %s: priority %s still paused (its PG above XON)", pname, prios[0])
	}
	return fmt.Sprintf("XOFF refreshed on %s: priorities %s still paused (their PGs above XON)", pname, strings.Join(prios, ","))
}

// pfcNote describes a MAC Control frame.
func pfcNote(b []byte, verb string) string {
	var mc wire.MACControl
	if err := wire.DecodeMACControl(b, &mc); err != nil {
		return "malformed MAC Control frame " + verb
	}
	if mc.Opcode == wire.MACControlOpPause {
		return fmt.Sprintf("PAUSE %s: %d quanta", verb, mc.Time[0])
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "PFC %s:", verb)
	for prio := range 8 {
		if mc.Enable&(1<<prio) == 0 {
			continue
		}
		if mc.Time[prio] == 0 {
			fmt.Fprintf(&sb, " prio%d XON", prio)
		} else {
			fmt.Fprintf(&sb, " prio%d XOFF %d quanta", prio, mc.Time[prio])
		}
	}
	return sb.String()
}

// isLinkState reports a link-state advertisement of the switches
// (switchcore/linkstate.go).
func isLinkState(b []byte) bool {
	return len(b) >= wire.EthernetSize && wire.MAC(b[0:6]) == wire.LinkStateDst &&
		int(b[12])<<8|int(b[13]) == wire.EtherTypeLinkState
}

// linkStateNote describes a link-state advertisement.
func linkStateNote(b []byte, verb string) string {
	var l wire.LinkState
	if err := wire.DecodeLinkState(b, &l); err != nil {
		return "malformed link-state advertisement " + verb
	}
	down := "nothing down"
	if len(l.Down) > 0 {
		down = "ports down: " + strings.Join(l.Down, ", ")
	}
	return fmt.Sprintf("link-state advertisement %s: %s (epoch %d, sequence %d), %s", verb, l.Origin, l.Epoch, l.Seq, down)
}

func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// subscribe starts a capture of ports (indexes); loop goroutine.
func (d *Daemon) subscribe(ports []int, padLinks bool) *captureSub {
	s := newCaptureSub(ports, padLinks)
	for _, idx := range ports {
		p := d.ports[idx]
		p.caps = append(p.caps, s)
	}
	d.capturing = true
	return s
}

// unsubscribe ends a capture; loop goroutine.
func (d *Daemon) unsubscribe(s *captureSub) {
	if s.closed {
		return
	}
	s.closed = true
	still := false
	for _, p := range d.ports {
		for i, c := range p.caps {
			if c == s {
				p.caps = append(p.caps[:i:i], p.caps[i+1:]...)
				break
			}
		}
		still = still || len(p.caps) > 0
	}
	d.capturing = still
	s.q.Close()
}

// streamCapture writes s's records as pcapng to w until the records end
// (the capture was unsubscribed) or a write fails; a capture that ends
// (unsubscribed, or the daemon stopping) ends with the records still
// queued and its statistics blocks (finishCapture).
func (d *Daemon) streamCapture(w io.Writer, s *captureSub, ports []int) error {
	ng, err := capture.NewNgWriter(w, "emuswitch")
	if err != nil {
		return err
	}
	link := capture.LinkTypeEthernet
	if d.ib {
		link = capture.LinkTypeERF
	}
	for _, idx := range ports {
		if _, err := ng.AddInterface(capture.Interface{
			LinkType:    link,
			Name:        d.sw.Name() + ":" + d.ports[idx].name,
			Description: "emuswitch " + d.opts.Node + " port " + d.ports[idx].name,
		}); err != nil {
			return err
		}
	}
	if err := ng.Flush(); err != nil {
		return err
	}
	// The records in time order (capqueue); flushed whenever the writer
	// has caught up, so a live viewer sees every frame promptly and a busy
	// capture still writes in large chunks.
	for {
		if r, ok := s.q.Next(); ok {
			if err := d.writeRecord(ng, s, r); err != nil {
				return err
			}
			continue
		}
		if err := ng.Flush(); err != nil {
			return err
		}
		if !s.q.Wait(d.quit, nil) {
			return d.finishCapture(ng, s)
		}
	}
}

// writeRecord writes one capture record, its gap note in its comment.
func (d *Daemon) writeRecord(ng *capture.NgWriter, s *captureSub, r capRecord) error {
	if r.dropped > 0 {
		r.comment = capture.GapComment(r.comment, r.dropped)
	}
	switch {
	case !d.ib:
		return ng.WritePacket(r.iface, r.ts, r.data, r.comment)
	case isIBLink(r.data) && s.padLinks:
		copy(s.pad[:], r.data)
		return ng.WriteERF(r.iface, r.ts, capture.ERFTypeInfiniBandLink, uint8(r.dir), s.pad[:], r.comment)
	case isIBLink(r.data):
		return ng.WriteERF(r.iface, r.ts, capture.ERFTypeInfiniBandLink, uint8(r.dir), r.data, r.comment)
	}
	return ng.WriteERF(r.iface, r.ts, capture.ERFTypeInfiniBand, uint8(r.dir), r.data, r.comment)
}

// finishCapture ends a capture's stream: the records still queued, in
// time order, then an Interface Statistics Block per interface with
// the records this capture was offered (isb_ifrecv) and lost
// (isb_ifdrop: all of them, also those after the port's last record,
// which no comment can report), then the stream is flushed.
func (d *Daemon) finishCapture(ng *capture.NgWriter, s *captureSub) error {
	for _, r := range s.q.Drain() {
		if err := d.writeRecord(ng, s, r); err != nil {
			return err
		}
	}
	now := time.Now()
	for i := range s.recv {
		err := ng.WriteInterfaceStats(i, capture.InterfaceStats{Time: now, Start: s.start,
			Recv: int64(s.recv[i].Load()), Drop: int64(s.drops[i].Load()), Delivered: -1})
		if err != nil {
			return err
		}
	}
	return ng.Close()
}
