package capture

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/emufabric/emufabric/wire"
)

// Interface Statistics Block (pcapng section 4.6): block type 5, then
// interface ID(4) timestamp high(4) timestamp low(4) and options, among
// them isb_starttime (2) and isb_endtime (3), timestamps as the block's,
// and the 64-bit counts isb_ifrecv (4, packets the interface received
// since the capture started), isb_ifdrop (5, packets it dropped for lack
// of resources: here records a slow reader lost) and isb_usrdeliv (8,
// packets delivered to the user: written to the file). Wireshark shows
// them under Statistics > Capture File Properties; capinfos counts them
// as "stat entries". A capture writes one per interface at its end.
const (
	ngBlockISB = 0x00000005

	ngOptIsbStartTime = 2
	ngOptIsbEndTime   = 3
	ngOptIsbIfRecv    = 4
	ngOptIsbIfDrop    = 5
	ngOptIsbUsrDeliv  = 8

	ngISBFixed = 12 // interface ID, ts high, ts low
)

// InterfaceStats are the counts of an Interface Statistics Block. A
// negative count is unknown and not written (or was not in the block).
type InterfaceStats struct {
	Time      time.Time // when the counts were taken (the block's timestamp)
	Start     time.Time // isb_starttime; zero: not given
	Recv      int64     // isb_ifrecv
	Drop      int64     // isb_ifdrop
	Delivered int64     // isb_usrdeliv
}

// UnknownStats is an InterfaceStats with every count unknown.
func UnknownStats(at time.Time) InterfaceStats {
	return InterfaceStats{Time: at, Recv: -1, Drop: -1, Delivered: -1}
}

// WriteInterfaceStats appends an Interface Statistics Block for
// interface id with the known counts of st (and isb_endtime st.Time).
func (w *NgWriter) WriteInterfaceStats(id int, st InterfaceStats) error {
	if w.closed {
		return errClosed
	}
	if id < 0 || id >= len(w.ifaces) {
		return wire.Errorf("pcapng ISB", "Interface ID", -1, wire.ReasonInvalid,
			"interface %d not added (have %d)", id, len(w.ifaces))
	}
	type opt struct {
		code uint16
		v    uint64
	}
	opts := make([]opt, 0, 5)
	if !st.Start.IsZero() {
		opts = append(opts, opt{ngOptIsbStartTime, uint64(st.Start.UnixNano())})
	}
	opts = append(opts, opt{ngOptIsbEndTime, uint64(st.Time.UnixNano())})
	for _, c := range []struct {
		code uint16
		n    int64
	}{{ngOptIsbIfRecv, st.Recv}, {ngOptIsbIfDrop, st.Drop}, {ngOptIsbUsrDeliv, st.Delivered}} {
		if c.n >= 0 {
			opts = append(opts, opt{c.code, uint64(c.n)})
		}
	}
	total := ngBlockOverhead + ngISBFixed + len(opts)*optLen(8) + 4
	ns := uint64(st.Time.UnixNano())
	var b [12]byte
	h := w.hdr[:20]
	binary.LittleEndian.PutUint32(h[0:], ngBlockISB)
	binary.LittleEndian.PutUint32(h[4:], uint32(total))
	binary.LittleEndian.PutUint32(h[8:], uint32(id))
	binary.LittleEndian.PutUint32(h[12:], uint32(ns>>32))
	binary.LittleEndian.PutUint32(h[16:], uint32(ns))
	w.bw.Write(h)
	for _, o := range opts {
		// Timestamps in options are high and low 32-bit words, as the
		// block's; the counts are plain 64-bit numbers.
		binary.LittleEndian.PutUint16(b[0:], o.code)
		binary.LittleEndian.PutUint16(b[2:], 8)
		if o.code == ngOptIsbStartTime || o.code == ngOptIsbEndTime {
			binary.LittleEndian.PutUint32(b[4:], uint32(o.v>>32))
			binary.LittleEndian.PutUint32(b[8:], uint32(o.v))
		} else {
			binary.LittleEndian.PutUint64(b[4:], o.v)
		}
		w.bw.Write(b[:])
	}
	w.writeEndOfOpt()
	return w.writeU32(uint32(total))
}

// statsBlock decodes an ISB in nr.buf and keeps it as its interface's
// latest statistics. Statistics are an aside to the packets: a block this
// reader cannot make sense of (too short, an interface not described, an
// option of the wrong size) is passed over as an unknown block would be,
// not an error that would stop the packets after it from being read.
func (nr *ngReader) statsBlock() {
	b := nr.buf
	if len(b) < ngISBFixed {
		return
	}
	id := nr.order.Uint32(b[0:])
	if int64(id) >= int64(len(nr.ifaces)) {
		return
	}
	ifc := &nr.ifaces[id]
	ts := func(v []byte) time.Time {
		return ifc.timestamp(uint64(nr.order.Uint32(v[0:]))<<32 | uint64(nr.order.Uint32(v[4:])))
	}
	st := UnknownStats(ts(b[4:]))
	bad := errors.New("bad option")
	err := nr.options("ISB", b[ngISBFixed:], 0, func(code uint16, v []byte) error {
		if code < ngOptIsbStartTime || code > ngOptIsbUsrDeliv {
			return nil
		}
		if len(v) != 8 {
			return bad
		}
		n := int64(nr.order.Uint64(v) & (1<<63 - 1))
		switch code {
		case ngOptIsbStartTime:
			st.Start = ts(v)
		case ngOptIsbIfRecv:
			st.Recv = n
		case ngOptIsbIfDrop:
			st.Drop = n
		case ngOptIsbUsrDeliv:
			st.Delivered = n
		}
		return nil
	})
	if err != nil {
		return
	}
	if nr.stats == nil {
		nr.stats = map[int]InterfaceStats{}
	}
	nr.stats[int(id)] = st
}

// InterfaceStats returns the statistics of the last Interface
// Statistics Block read for each interface of a pcapng file (in the
// current section), by interface ID; nil for classic pcap or when none
// was read yet. A file's ISBs usually come at its end, after the last
// packet: they are there once Next has returned io.EOF.
func (r *Reader) InterfaceStats() map[int]InterfaceStats {
	if r.ng == nil {
		return nil
	}
	return r.ng.stats
}
