package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"time"

	"github.com/emufabric/emufabric/wire"
)

// Format is the container format Open detected.
type Format uint8

const (
	FormatPcap Format = iota + 1
	FormatPcapNG
)

func (f Format) String() string {
	switch f {
	case FormatPcap:
		return "pcap"
	case FormatPcapNG:
		return "pcapng"
	}
	return "format(" + itoa(int(f)) + ")"
}

// Reader reads records from a pcap or pcapng file.
type Reader struct {
	format Format
	pcap   *pcapReader
	ng     *ngReader
}

// Open detects the format of r from its first four bytes (pcap in either
// byte order with the microsecond or nanosecond magic, or pcapng) and reads
// the file header. r is read sequentially and never seeked; wrap it in a
// bufio.Reader if it is unbuffered.
func Open(r io.Reader) (*Reader, error) {
	var m [4]byte
	if n, err := io.ReadFull(r, m[:]); err != nil {
		return nil, shortRead(wire.Truncated("capture file", "magic", 0, 4, n))
	}
	if binary.BigEndian.Uint32(m[:]) == ngBlockSHB {
		ng, err := newNgReader(r)
		if err != nil {
			return nil, err
		}
		return &Reader{format: FormatPcapNG, ng: ng}, nil
	}
	pr, err := newPcapReader(r, m)
	if err != nil {
		return nil, err
	}
	return &Reader{format: FormatPcap, pcap: pr}, nil
}

// Format is the detected file format.
func (r *Reader) Format() Format { return r.format }

// LinkType is the link type of a classic pcap file, or of the first
// interface of a pcapng file (0 if no interface has been read yet).
func (r *Reader) LinkType() LinkType {
	if r.pcap != nil {
		return r.pcap.link
	}
	if len(r.ng.ifaces) > 0 {
		return r.ng.ifaces[0].link
	}
	return 0
}

// Next reads the next packet into rec. It returns io.EOF after the last
// one. rec.Data and rec.Raw stay valid until the following call.
func (r *Reader) Next(rec *Record) error {
	if r.pcap != nil {
		return r.pcap.next(rec)
	}
	return r.ng.next(rec)
}

type ngIface struct {
	link    LinkType
	snaplen uint32
	tsresol uint8 // raw if_tsresol value
	tsoff   int64 // if_tsoffset, seconds
}

type ngReader struct {
	r      io.Reader
	order  binary.ByteOrder
	ifaces []ngIface
	off    int // file offset of the next block
	blocks int // blocks read, for error names
	hdr    [8]byte
	buf    []byte
	first  bool                   // the SHB type was already consumed by Open
	stats  map[int]InterfaceStats // the last ISB of each interface (isb.go)
}

func newNgReader(r io.Reader) (*ngReader, error) {
	nr := &ngReader{r: r, first: true}
	// Read the SHB now so that a file that is not pcapng fails in Open.
	total, err := nr.readBlock()
	if err != nil {
		return nil, err
	}
	if err := nr.section(); err != nil {
		return nil, err
	}
	nr.off = total
	return nr, nil
}

func (nr *ngReader) name(block string) string {
	return "pcapng " + block + " (block " + itoa(nr.blocks) + ")"
}

// readBlock reads one whole block into nr.hdr (type, length) and nr.buf
// (body without the trailing length) and returns the block's total length.
// It returns io.EOF at a clean end. nr.off must be the block's offset.
func (nr *ngReader) readBlock() (int, error) {
	start := 0
	if nr.first {
		// Open consumed the 4-byte SHB type.
		binary.BigEndian.PutUint32(nr.hdr[:], ngBlockSHB)
		start = 4
		nr.first = false
	}
	n, err := io.ReadFull(nr.r, nr.hdr[start:])
	if err == io.EOF && start == 0 {
		return 0, io.EOF
	}
	nr.blocks++
	if err != nil {
		return 0, shortRead(wire.Truncated(nr.name("block"), "Block Total Length", nr.off, 8, start+n))
	}
	typ := binary.BigEndian.Uint32(nr.hdr[:])
	if typ == ngBlockSHB {
		// A new section: its byte-order magic follows the length, so the
		// length cannot be decoded before peeking at it.
		var bom [4]byte
		if n, err := io.ReadFull(nr.r, bom[:]); err != nil {
			return 0, shortRead(wire.Truncated(nr.name("SHB"), "Byte-Order Magic", nr.off, 12, 8+n))
		}
		switch {
		case binary.LittleEndian.Uint32(bom[:]) == ngByteOrderMagic:
			nr.order = binary.LittleEndian
		case binary.BigEndian.Uint32(bom[:]) == ngByteOrderMagic:
			nr.order = binary.BigEndian
		default:
			return 0, wire.Errorf(nr.name("SHB"), "Byte-Order Magic", nr.off+8, wire.ReasonInvalid,
				"% x is neither 1A2B3C4D nor 4D3C2B1A", bom[:])
		}
		total, err := nr.blockLen("SHB", 28)
		if err != nil {
			return 0, err
		}
		return total, nr.readBody(total, bom[:])
	}
	if nr.order == nil {
		return 0, wire.Errorf(nr.name("block"), "Block Type", nr.off, wire.ReasonInvalid, "file does not start with an SHB")
	}
	total, err := nr.blockLen("block", ngBlockOverhead)
	if err != nil {
		return 0, err
	}
	return total, nr.readBody(total, nil)
}

func (nr *ngReader) blockLen(block string, min uint32) (int, error) {
	total := nr.order.Uint32(nr.hdr[4:])
	if total < min || total%4 != 0 || total > ngMaxBlock {
		return 0, wire.Errorf(nr.name(block), "Block Total Length", nr.off+4, wire.ReasonInvalid,
			"%d (must be a multiple of 4 between %d and %d)", total, min, ngMaxBlock)
	}
	return int(total), nil
}

// readBody reads the rest of a block of total bytes, of which prefix was
// already read after the 8-byte header, and checks the trailing length.
func (nr *ngReader) readBody(total int, prefix []byte) error {
	body := total - 8
	if cap(nr.buf) < len(prefix) {
		nr.buf = make([]byte, len(prefix))
	}
	nr.buf = nr.buf[:len(prefix)]
	copy(nr.buf, prefix)
	var n int
	var err error
	if nr.buf, n, err = readFullGrow(nr.r, nr.buf, len(prefix), body); err != nil {
		return shortRead(wire.Truncated(nr.name("block"), "Block Body", nr.off+8, body, n))
	}
	if tail := nr.order.Uint32(nr.buf[body-4:]); int(tail) != total {
		return wire.Errorf(nr.name("block"), "trailing Block Total Length", nr.off+total-4, wire.ReasonInconsistent,
			"%d, the leading one is %d", tail, total)
	}
	nr.buf = nr.buf[:body-4]
	return nil
}

// section starts a new section from the SHB body in nr.buf.
func (nr *ngReader) section() error {
	b := nr.buf // BOM(4) major(2) minor(2) section length(8) options
	if major := nr.order.Uint16(b[4:]); major != 1 {
		return wire.Errorf(nr.name("SHB"), "Major Version", nr.off+12, wire.ReasonUnsupported,
			"version %d, only 1 is defined", major)
	}
	nr.ifaces = nr.ifaces[:0]
	nr.stats = nil
	return nil
}

// options walks the options in b (starting at file offset off) and calls f
// for each.
func (nr *ngReader) options(block string, b []byte, off int, f func(code uint16, v []byte) error) error {
	for len(b) > 0 {
		if len(b) < 4 {
			return wire.Truncated(nr.name(block), "Option Length", off, 4, len(b))
		}
		code := nr.order.Uint16(b[0:])
		n := int(nr.order.Uint16(b[2:]))
		if code == ngOptEndOfOpt {
			return nil
		}
		if 4+n > len(b) {
			return wire.Errorf(nr.name(block), "Option Length", off+2, wire.ReasonTruncated,
				"option %d of %d bytes, %d left in the block", code, n, len(b)-4)
		}
		if err := f(code, b[4:4+n]); err != nil {
			return err
		}
		adv := 4 + n + pad4(n)
		if adv > len(b) {
			adv = len(b)
		}
		b = b[adv:]
		off += adv
	}
	return nil
}

func (nr *ngReader) interfaceBlock() error {
	b := nr.buf
	if len(b) < 8 {
		return wire.Truncated(nr.name("IDB"), "SnapLen", nr.off+8, 8, len(b))
	}
	ifc := ngIface{link: LinkType(nr.order.Uint16(b[0:])), snaplen: nr.order.Uint32(b[4:]), tsresol: 6}
	err := nr.options("IDB", b[8:], nr.off+16, func(code uint16, v []byte) error {
		switch code {
		case ngOptIfTsresol:
			if len(v) != 1 {
				return wire.Errorf(nr.name("IDB"), "if_tsresol", nr.off, wire.ReasonInvalid, "%d bytes, want 1", len(v))
			}
			r := v[0]
			if (r&0x80 == 0 && r > 19) || (r&0x80 != 0 && r&0x7F > 63) {
				return wire.Errorf(nr.name("IDB"), "if_tsresol", nr.off, wire.ReasonUnsupported, "resolution 0x%02x", r)
			}
			ifc.tsresol = r
		case ngOptIfTsoff:
			if len(v) != 8 {
				return wire.Errorf(nr.name("IDB"), "if_tsoffset", nr.off, wire.ReasonInvalid, "%d bytes, want 8", len(v))
			}
			ifc.tsoff = int64(nr.order.Uint64(v))
		}
		return nil
	})
	if err != nil {
		return err
	}
	nr.ifaces = append(nr.ifaces, ifc)
	return nil
}

// timestamp converts a raw pcapng timestamp in the interface's units.
func (ifc *ngIface) timestamp(ts uint64) time.Time {
	var sec, ns uint64
	r := ifc.tsresol
	if r&0x80 == 0 {
		unit := pow10[r]
		sec = ts / unit
		frac := ts % unit
		if r <= 9 {
			ns = frac * pow10[9-r]
		} else {
			ns = frac / pow10[r-9]
		}
	} else {
		p := uint(r & 0x7F)
		sec = ts >> p
		frac := ts & (1<<p - 1)
		hi, lo := bits.Mul64(frac, 1_000_000_000)
		if p == 0 {
			ns = 0
		} else {
			ns = hi<<(64-p) | lo>>p
		}
	}
	return time.Unix(int64(sec)+ifc.tsoff, int64(ns))
}

var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return
}()

func (nr *ngReader) next(rec *Record) error {
	for {
		start := nr.off
		total, err := nr.readBlock()
		if err != nil {
			return err
		}
		typ := nr.order.Uint32(nr.hdr[0:])
		if binary.BigEndian.Uint32(nr.hdr[0:]) == ngBlockSHB {
			typ = ngBlockSHB
		}
		nr.off = start + total
		switch typ {
		case ngBlockSHB:
			nr.off = start // section() names the SHB's offset
			err = nr.section()
			nr.off = start + total
		case ngBlockIDB:
			nr.off = start
			err = nr.interfaceBlock()
			nr.off = start + total
		case ngBlockISB:
			nr.statsBlock()
		case ngBlockEPB, ngBlockPB:
			return nr.packet(rec, typ, start)
		case ngBlockSPB:
			return nr.simplePacket(rec, start)
		}
		if err != nil {
			return err
		}
	}
}

func (nr *ngReader) iface(block string, id uint32, off int) (*ngIface, error) {
	if int64(id) >= int64(len(nr.ifaces)) {
		return nil, wire.Errorf(nr.name(block), "Interface ID", off, wire.ReasonInconsistent,
			"interface %d, only %d described", id, len(nr.ifaces))
	}
	return &nr.ifaces[id], nil
}

// packet decodes an EPB (or the obsolete PB, whose interface ID is 16 bits
// followed by a 16-bit drop count).
func (nr *ngReader) packet(rec *Record, typ uint32, start int) error {
	block := "EPB"
	if typ == ngBlockPB {
		block = "PB"
	}
	b := nr.buf
	if len(b) < ngEPBFixed {
		return wire.Truncated(nr.name(block), "Original Packet Length", start+8, ngEPBFixed, len(b))
	}
	id := nr.order.Uint32(b[0:])
	if typ == ngBlockPB {
		id = uint32(nr.order.Uint16(b[0:]))
	}
	ifc, err := nr.iface(block, id, start+8)
	if err != nil {
		return err
	}
	ts := uint64(nr.order.Uint32(b[4:]))<<32 | uint64(nr.order.Uint32(b[8:]))
	capLen := nr.order.Uint32(b[12:])
	orig := nr.order.Uint32(b[16:])
	if int64(capLen) > int64(len(b)-ngEPBFixed) {
		return wire.Errorf(nr.name(block), "Captured Packet Length", start+20, wire.ReasonInconsistent,
			"%d bytes, the block holds %d", capLen, len(b)-ngEPBFixed)
	}
	if capLen > orig {
		return wire.Errorf(nr.name(block), "Captured Packet Length", start+20, wire.ReasonInconsistent,
			"captured %d bytes of a %d-byte packet", capLen, orig)
	}
	data := b[ngEPBFixed : ngEPBFixed+int(capLen)]
	*rec = Record{LinkType: ifc.link, Interface: int(id), Timestamp: ifc.timestamp(ts),
		OrigLen: int(orig), Data: data, Raw: data}
	optStart := ngEPBFixed + int(capLen) + pad4(int(capLen))
	if optStart < len(b) {
		err := nr.options(block, b[optStart:], start+8+optStart, func(code uint16, v []byte) error {
			if code == ngOptComment && rec.Comment == "" {
				rec.Comment = string(v)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return finishRecord(rec, start+8+ngEPBFixed)
}

// simplePacket decodes an SPB: interface 0, no timestamp, the captured
// length implied by the block length and the snaplen.
func (nr *ngReader) simplePacket(rec *Record, start int) error {
	b := nr.buf
	if len(b) < 4 {
		return wire.Truncated(nr.name("SPB"), "Original Packet Length", start+8, 4, len(b))
	}
	ifc, err := nr.iface("SPB", 0, start+8)
	if err != nil {
		return err
	}
	orig := nr.order.Uint32(b[0:])
	n := uint32(len(b) - 4)
	if orig < n {
		n = orig
	}
	if ifc.snaplen != 0 && ifc.snaplen < n {
		n = ifc.snaplen
	}
	data := b[4 : 4+n]
	*rec = Record{LinkType: ifc.link, OrigLen: int(orig), Data: data, Raw: data}
	return finishRecord(rec, start+12)
}

// shortRead marks a truncation the stream's end caused (the bytes ran out
// inside a block), as against one inside a block's own fields: it is also
// io.ErrUnexpectedEOF, so a reader of a live stream can tell a writer that
// stopped in the middle of a block from a damaged block.
func shortRead(e *wire.Error) error { return shortReadError{e} }

type shortReadError struct{ e *wire.Error }

func (s shortReadError) Error() string   { return s.e.Error() }
func (s shortReadError) Unwrap() []error { return []error{s.e, io.ErrUnexpectedEOF} }

// ReadAll reads a whole stream: every record (Data and Raw copied, so
// each stays valid) and, for pcapng, the statistics of each interface
// (InterfaceStats at the end). For a capture read after it ended, as a
// live capture's client or a test does.
func ReadAll(src io.Reader) ([]Record, map[int]InterfaceStats, error) {
	r, err := Open(src)
	if err != nil {
		return nil, nil, err
	}
	var out []Record
	for {
		var rec Record
		err := r.Next(&rec)
		if errors.Is(err, io.EOF) {
			return out, r.InterfaceStats(), nil
		}
		if err != nil {
			return out, r.InterfaceStats(), err
		}
		rec.Data = bytes.Clone(rec.Data)
		rec.Raw = bytes.Clone(rec.Raw)
		out = append(out, rec)
	}
}
