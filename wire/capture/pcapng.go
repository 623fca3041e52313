package capture

import (
	"bufio"
	"encoding/binary"
	"io"
	"time"

	"github.com/emufabric/emufabric/wire"
)

// pcapng (draft-ietf-opsawg-pcapng): a file is a sequence of blocks, each
// type(4) total_length(4) body total_length(4), padded to 4 bytes. Options
// are code(2) length(2) value padded to 4, ended by opt_endofopt (0, 0).
// A Section Header Block (SHB) starts every section and fixes its byte
// order; Interface Description Blocks (IDBs) number the interfaces 0, 1, ...
// in order, each with its own link type; Enhanced Packet Blocks (EPBs) carry
// packets, their interface ID, timestamp and options such as opt_comment.
const (
	ngBlockSHB = 0x0A0D0D0A
	ngBlockIDB = 0x00000001
	ngBlockPB  = 0x00000002 // obsolete Packet Block, read only
	ngBlockSPB = 0x00000003 // Simple Packet Block, read only
	ngBlockEPB = 0x00000006

	ngByteOrderMagic = 0x1A2B3C4D

	ngOptEndOfOpt  = 0
	ngOptComment   = 1
	ngOptShbApp    = 4
	ngOptIfName    = 2
	ngOptIfDescr   = 3
	ngOptIfTsresol = 9
	ngOptIfTsoff   = 14

	ngBlockOverhead = 12 // type, total length, trailing total length
	ngEPBFixed      = 20 // interface ID, ts high, ts low, captured len, original len
	ngMaxBlock      = MaxRecordSize + 4096
)

// Interface describes one capture interface of a pcapng file.
type Interface struct {
	LinkType    LinkType
	Name        string // if_name, e.g. "sw1:p3"
	Description string // if_description
	SnapLen     uint32 // 0 means DefaultSnapLen
}

// NgWriter writes a pcapng file: one section, any number of interfaces with
// their own link types, packets with nanosecond timestamps (if_tsresol 9)
// and optional per-packet comments. Blocks are little-endian.
type NgWriter struct {
	bw     *bufio.Writer
	ifaces []Interface
	closed bool
	// Headers are assembled in these struct-owned arrays rather than in
	// locals: a local array handed to bufio.Writer.Write escapes (it may
	// reach the underlying io.Writer) and would cost an allocation per packet.
	hdr [ngBlockOverhead - 4 + ngEPBFixed]byte
	erf [ERFHeaderSize]byte
}

var zeroPad [4]byte

func pad4(n int) int { return (4 - n&3) & 3 }

// optLen is the encoded size of an option holding n bytes of value.
func optLen(n int) int { return 4 + n + pad4(n) }

// NewNgWriter writes the Section Header Block. application, if not empty,
// goes into shb_userappl.
func NewNgWriter(w io.Writer, application string) (*NgWriter, error) {
	nw := &NgWriter{bw: bufio.NewWriterSize(w, 64<<10)}
	opts := 0
	if application != "" {
		opts = optLen(len(application)) + 4
	}
	total := ngBlockOverhead + 16 + opts
	var h [24]byte
	binary.LittleEndian.PutUint32(h[0:], ngBlockSHB)
	binary.LittleEndian.PutUint32(h[4:], uint32(total))
	binary.LittleEndian.PutUint32(h[8:], ngByteOrderMagic)
	binary.LittleEndian.PutUint16(h[12:], 1) // major
	binary.LittleEndian.PutUint16(h[14:], 0) // minor
	binary.LittleEndian.PutUint64(h[16:], ^uint64(0))
	nw.bw.Write(h[:])
	if application != "" {
		nw.writeOption(ngOptShbApp, application)
		nw.writeEndOfOpt()
	}
	return nw, nw.writeU32(uint32(total))
}

func (w *NgWriter) writeU32(v uint32) error {
	binary.LittleEndian.PutUint32(w.hdr[:4], v)
	_, err := w.bw.Write(w.hdr[:4])
	return err
}

func (w *NgWriter) writeOption(code uint16, v string) {
	binary.LittleEndian.PutUint16(w.hdr[0:], code)
	binary.LittleEndian.PutUint16(w.hdr[2:], uint16(len(v)))
	w.bw.Write(w.hdr[:4])
	w.bw.WriteString(v)
	w.bw.Write(zeroPad[:pad4(len(v))])
}

func (w *NgWriter) writeEndOfOpt() { w.bw.Write(zeroPad[:]) }

// AddInterface writes an Interface Description Block and returns the
// interface ID to pass to WritePacket. Interfaces may be added at any time;
// a packet may only name an interface added before it.
func (w *NgWriter) AddInterface(ifc Interface) (int, error) {
	if w.closed {
		return 0, errClosed
	}
	if ifc.SnapLen == 0 {
		ifc.SnapLen = DefaultSnapLen
	}
	for _, s := range []string{ifc.Name, ifc.Description} {
		if len(s) > 0xFFFF {
			return 0, wire.Errorf("pcapng IDB", "options", -1, wire.ReasonInvalid, "option of %d bytes", len(s))
		}
	}
	opts := optLen(1) + 4 // if_tsresol + opt_endofopt
	if ifc.Name != "" {
		opts += optLen(len(ifc.Name))
	}
	if ifc.Description != "" {
		opts += optLen(len(ifc.Description))
	}
	total := ngBlockOverhead + 8 + opts
	h := w.hdr[:16]
	clear(h)
	binary.LittleEndian.PutUint32(h[0:], ngBlockIDB)
	binary.LittleEndian.PutUint32(h[4:], uint32(total))
	binary.LittleEndian.PutUint16(h[8:], uint16(ifc.LinkType))
	binary.LittleEndian.PutUint32(h[12:], ifc.SnapLen)
	w.bw.Write(h)
	if ifc.Name != "" {
		w.writeOption(ngOptIfName, ifc.Name)
	}
	if ifc.Description != "" {
		w.writeOption(ngOptIfDescr, ifc.Description)
	}
	// if_tsresol 9: timestamps count nanoseconds (the default would be µs).
	w.writeOption(ngOptIfTsresol, "\x09")
	w.writeEndOfOpt()
	if err := w.writeU32(uint32(total)); err != nil {
		return 0, err
	}
	w.ifaces = append(w.ifaces, ifc)
	return len(w.ifaces) - 1, nil
}

// WritePacket appends an Enhanced Packet Block for data captured whole on
// interface id at ts, with comment as opt_comment unless it is empty.
func (w *NgWriter) WritePacket(id int, ts time.Time, data []byte, comment string) error {
	return w.writeEPB(id, ts, nil, data, comment)
}

// WriteERF appends data wrapped in an ERF record of type erfType on ERF
// interface erfIface (0-3) to interface id, whose link type must be
// LinkTypeERF. See PcapWriter.WriteERF.
func (w *NgWriter) WriteERF(id int, ts time.Time, erfType, erfIface uint8, data []byte, comment string) error {
	if id >= 0 && id < len(w.ifaces) && w.ifaces[id].LinkType != LinkTypeERF {
		return wire.Errorf("pcapng EPB", "Interface ID", -1, wire.ReasonInconsistent,
			"ERF record on interface %d of link type %d", id, w.ifaces[id].LinkType)
	}
	erf := w.erf[:]
	if err := PutERFHeader(erf, ts, erfType, erfIface, len(data)); err != nil {
		return err
	}
	return w.writeEPB(id, ts, erf, data, comment)
}

// writeEPB writes one EPB whose packet is prefix followed by data.
func (w *NgWriter) writeEPB(id int, ts time.Time, prefix, data []byte, comment string) error {
	if w.closed {
		return errClosed
	}
	if id < 0 || id >= len(w.ifaces) {
		return wire.Errorf("pcapng EPB", "Interface ID", -1, wire.ReasonInvalid,
			"interface %d not added (have %d)", id, len(w.ifaces))
	}
	n := len(prefix) + len(data)
	if n > int(w.ifaces[id].SnapLen) {
		return wire.Errorf("pcapng EPB", "Captured Packet Length", -1, wire.ReasonInvalid,
			"%d bytes exceed the snaplen %d", n, w.ifaces[id].SnapLen)
	}
	if len(comment) > 0xFFFF {
		return wire.Errorf("pcapng EPB", "opt_comment", -1, wire.ReasonInvalid, "comment of %d bytes", len(comment))
	}
	opts := 0
	if comment != "" {
		opts = optLen(len(comment)) + 4
	}
	total := ngBlockOverhead + ngEPBFixed + n + pad4(n) + opts
	ns := uint64(ts.UnixNano())
	h := &w.hdr
	binary.LittleEndian.PutUint32(h[0:], ngBlockEPB)
	binary.LittleEndian.PutUint32(h[4:], uint32(total))
	binary.LittleEndian.PutUint32(h[8:], uint32(id))
	binary.LittleEndian.PutUint32(h[12:], uint32(ns>>32))
	binary.LittleEndian.PutUint32(h[16:], uint32(ns))
	binary.LittleEndian.PutUint32(h[20:], uint32(n))
	binary.LittleEndian.PutUint32(h[24:], uint32(n))
	w.bw.Write(h[:])
	w.bw.Write(prefix)
	w.bw.Write(data)
	w.bw.Write(zeroPad[:pad4(n)])
	if comment != "" {
		w.writeOption(ngOptComment, comment)
		w.writeEndOfOpt()
	}
	return w.writeU32(uint32(total))
}

// Flush writes buffered blocks to the underlying writer.
func (w *NgWriter) Flush() error { return w.bw.Flush() }

// Close flushes and makes later writes fail. It does not close the
// underlying io.Writer.
func (w *NgWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	return w.bw.Flush()
}
