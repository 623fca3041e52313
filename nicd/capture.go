package nicd

import (
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/internal/capqueue"
	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

// Live capture of the NIC's link port, as emuswitch's capture op:
// {"op":"capture"} answers one OK line, then the connection carries a
// pcapng stream (one Ethernet interface, the port) of every frame the NIC
// receives from and sends to the wire, each with a comment naming its
// direction and, for transmitted frames, the priority queue it left from.
// It ends when the client closes or half-closes the connection, or the
// daemon stops: then the records still queued are written, and an
// Interface Statistics Block with the frames this capture was offered
// (isb_ifrecv) and lost to a slow reader (isb_ifdrop, every one, also
// those after the last record, which no record's comment can report).
// The daemon counts its capture losses as capture_drop (ethtool text,
// emu_capture_dropped_records_total), as emuswitch does per port.
//
// On an IB port, {"op":"capture","pad_links":true} writes each 6-byte link
// (flow-control) packet zero-padded to capture.IBLinkPadSize bytes, the
// real 6 first, as emuswitch's capture and `emulab sim
// --capture-pad-links` do: Wireshark 4.0 shows a correct unpadded one as
// Malformed. A RoCE port has no link packets; the flag changes nothing.

// captureQueue is how many frames may wait for a slow capture client;
// beyond it frames are left out of the capture (counted), never delayed.
// controlQueue holds, beyond it, the control frames (PFC, IB flow
// control), which a capture of a lossless link is read for and which come
// exactly when the link is busiest (capqueue).
const (
	captureQueue = 4096
	controlQueue = 1024
)

type capRec struct {
	at      time.Time
	data    []byte
	tx      bool
	prio    uint8
	dropped uint64 // frames left out before this one
}

type capSub struct {
	q       *capqueue.Queues[capRec]
	recv    atomic.Uint64 // frames offered to this capture
	dropped atomic.Uint64 // of them, left out (the queue was full)
	pending uint64        // loop goroutine: drops not yet reported in a comment
	start   time.Time
	// padLinks pads IB link packets to capture.IBLinkPadSize bytes (the
	// writer's, in pad).
	padLinks bool
	pad      [capture.IBLinkPadSize]byte
}

// capture copies f to every capture subscriber. Loop goroutine. The copy is
// the price of capturing; without subscribers this is one length check.
func (d *Daemon) capture(f *frame.Frame, tx bool) {
	if len(d.caps) == 0 {
		return
	}
	now := time.Now()
	control := isControlFrame(f.Data)
	for _, s := range d.caps {
		r := capRec{at: now, data: append([]byte(nil), f.Data...), tx: tx, prio: f.Priority, dropped: s.pending}
		s.recv.Add(1)
		if s.q.Offer(r, control) {
			s.pending = 0
		} else {
			s.pending++
			s.dropped.Add(1)
			d.captureDrops.Add(1)
		}
	}
}

// streamCapture runs a capture on an accepted control connection after
// its OK line: it registers a subscriber on the loop and writes its
// stream (writeCapture). padLinks: the request's pad_links.
func (d *Daemon) streamCapture(c *net.UnixConn, rest io.Reader, padLinks bool) error {
	s := newCapSub(captureQueue, controlQueue, padLinks)
	if err := d.Do(func() { d.caps = append(d.caps, s) }); err != nil {
		return err
	}
	return d.writeCapture(c, rest, s)
}

// writeCapture writes subscriber s's records as pcapng to c until the
// client goes away (rest, what it sends, ends: it closed or half-closed)
// or the daemon closes; then it unregisters s and ends the stream with
// the records still queued and the statistics block.
func (d *Daemon) writeCapture(c io.Writer, rest io.Reader, s *capSub) error {
	unsubscribe := func() {
		d.Do(func() {
			for i, x := range d.caps {
				if x == s {
					d.caps = append(d.caps[:i], d.caps[i+1:]...)
					break
				}
			}
		})
	}
	defer unsubscribe()
	w, err := capture.NewNgWriter(c, "emunic")
	if err != nil {
		return err
	}
	// An IB port's packets are ERF records (LINKTYPE_ERF), as Wireshark
	// reads InfiniBand: type 21 data, type 25 link packets.
	ib := d.cfg.NIC.Fabric == nic.FabricIB
	lt := capture.LinkTypeEthernet
	if ib {
		lt = capture.LinkTypeERF
	}
	id, err := w.AddInterface(capture.Interface{LinkType: lt,
		Name: d.cfg.NIC.Name + ":" + d.cfg.Port, Description: "emunic " + d.cfg.NIC.Name + " link port (" + d.portName() + ")"})
	if err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// The client ends a capture by closing or half-closing; anything it
	// sends is ignored.
	gone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, rest)
		close(gone)
	}()
	write := func(r capRec) error {
		comment := captureNote(r, ib)
		if r.dropped > 0 {
			comment = capture.GapComment(comment, r.dropped)
		}
		if ib {
			t := uint8(capture.ERFTypeInfiniBand)
			data := r.data
			if len(r.data) == wire.IBLinkSize {
				t = capture.ERFTypeInfiniBandLink
				if s.padLinks {
					copy(s.pad[:], r.data)
					data = s.pad[:]
				}
			}
			// The ERF interface is the direction, as emuswitch writes it
			// (Wireshark's erf.flags.cap): 0 received, 1 sent.
			dir := uint8(0)
			if r.tx {
				dir = 1
			}
			return w.WriteERF(id, r.at, t, dir, data, comment)
		}
		return w.WritePacket(id, r.at, r.data, comment)
	}
	// finish writes the records queued now and the statistics block. On
	// the loop's side the capture is over first (when the loop still
	// runs), so that nothing is offered after the counts are taken.
	finish := func() {
		unsubscribe()
		for _, r := range s.q.Drain() {
			if write(r) != nil {
				return
			}
		}
		w.WriteInterfaceStats(id, capture.InterfaceStats{Time: time.Now(), Start: s.start,
			Recv: int64(s.recv.Load()), Drop: int64(s.dropped.Load()), Delivered: -1})
		w.Close()
	}
	for {
		if r, ok := s.q.Next(); ok {
			if write(r) != nil {
				return nil
			}
			continue
		}
		// Out as soon as no other record waits: a reader merging this
		// stream with a switch's (emulab capture) orders them by time
		// within a short window, and a daemon stopped next (emulab down)
		// leaves nothing unwritten.
		if err := w.Flush(); err != nil {
			return nil
		}
		if !s.q.Wait(gone, d.closing) {
			finish()
			return nil
		}
	}
}

// newCapSub is a capture subscriber with queues data and ctl deep.
func newCapSub(data, ctl int, padLinks bool) *capSub {
	return &capSub{q: capqueue.New(data, ctl, func(r *capRec) time.Time { return r.at }), start: time.Now(), padLinks: padLinks}
}

// isControlFrame reports a PFC or PAUSE frame, or an IB link
// (flow-control) packet: what takes the control queue when the data
// queue is full.
func isControlFrame(b []byte) bool {
	return len(b) == wire.IBLinkSize || len(b) >= wire.EthernetSize && b[12] == 0x88 && b[13] == 0x08
}

// captureNote is a record's comment: its direction and, sent on RoCE, the
// priority it was queued at; on IB the VL (and SL) from its LRH, or a link
// packet's flow control, as emuswitch notes them.
func captureNote(r capRec, ib bool) string {
	dir := "rx"
	if r.tx {
		dir = "tx"
	}
	switch {
	case !ib && r.tx:
		return fmt.Sprintf("tx prio %d", r.prio)
	case !ib:
		return dir
	case len(r.data) == wire.IBLinkSize:
		verb := "received"
		if r.tx {
			verb = "sent"
		}
		return dir + ": " + wire.IBLinkNote(r.data, verb)
	case len(r.data) >= wire.LRHSize:
		h := wire.LRH(r.data)
		return fmt.Sprintf("%s VL %d SL %d", dir, h.VL(), h.SL())
	}
	return dir
}
