package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"time"

	"github.com/emufabric/emufabric/wire"
)

// Classic pcap (tcpdump.org pcap file format, draft-ietf-opsawg-pcap):
// a 24-byte file header, then per packet a 16-byte record header and the
// captured bytes.
//
//	file header: magic(4) version_major(2)=2 version_minor(2)=4 thiszone(4)
//	             sigfigs(4) snaplen(4) linktype(4: low 16 bits link type,
//	             bits 28-31 FCS information)
//	record:      ts_sec(4) ts_frac(4) incl_len(4) orig_len(4) data
//
// The magic tells the byte order and the timestamp unit: 0xA1B2C3D4 for
// microseconds, 0xA1B23C4D for nanoseconds.
const (
	pcapMagicMicro = 0xA1B2C3D4
	pcapMagicNano  = 0xA1B23C4D

	pcapFileHeaderSize   = 24
	pcapRecordHeaderSize = 16
)

// errClosed is returned by writes after Close.
var errClosed = errors.New("capture: writer is closed")

// PcapWriter writes a classic pcap file with nanosecond timestamps in the
// host-independent little-endian byte order. One file has one link type.
type PcapWriter struct {
	bw      *bufio.Writer
	link    LinkType
	snaplen uint32
	closed  bool
	hdr     [pcapRecordHeaderSize + ERFHeaderSize]byte
}

// NewPcapWriter writes the file header for link and returns the writer.
func NewPcapWriter(w io.Writer, link LinkType) (*PcapWriter, error) {
	pw := &PcapWriter{bw: bufio.NewWriterSize(w, 64<<10), link: link, snaplen: DefaultSnapLen}
	var h [pcapFileHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:], pcapMagicNano)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	// thiszone and sigfigs stay 0, as every modern writer leaves them.
	binary.LittleEndian.PutUint32(h[16:], pw.snaplen)
	binary.LittleEndian.PutUint32(h[20:], uint32(link))
	if _, err := pw.bw.Write(h[:]); err != nil {
		return nil, err
	}
	return pw, nil
}

// LinkType is the file's link type.
func (w *PcapWriter) LinkType() LinkType { return w.link }

func (w *PcapWriter) putRecordHeader(ts time.Time, n int) error {
	if w.closed {
		return errClosed
	}
	if n > int(w.snaplen) {
		return wire.Errorf("pcap record", "incl_len", -1, wire.ReasonInvalid,
			"%d bytes exceed the snaplen %d", n, w.snaplen)
	}
	binary.LittleEndian.PutUint32(w.hdr[0:], uint32(ts.Unix()))
	binary.LittleEndian.PutUint32(w.hdr[4:], uint32(ts.Nanosecond()))
	binary.LittleEndian.PutUint32(w.hdr[8:], uint32(n))
	binary.LittleEndian.PutUint32(w.hdr[12:], uint32(n))
	return nil
}

// WritePacket appends one packet captured whole at ts. data is copied into
// the buffer before WritePacket returns.
func (w *PcapWriter) WritePacket(ts time.Time, data []byte) error {
	if err := w.putRecordHeader(ts, len(data)); err != nil {
		return err
	}
	if _, err := w.bw.Write(w.hdr[:pcapRecordHeaderSize]); err != nil {
		return err
	}
	_, err := w.bw.Write(data)
	return err
}

// WriteERF appends data wrapped in an ERF record of type erfType (for
// example ERFTypeInfiniBand with an IB packet from the LRH through the VCRC,
// or ERFTypeInfiniBandLink with a 6-byte link packet), captured on ERF
// interface iface (0-3). The file's link type must be LinkTypeERF.
func (w *PcapWriter) WriteERF(ts time.Time, erfType, iface uint8, data []byte) error {
	if w.link != LinkTypeERF {
		return wire.Errorf("pcap", "linktype", -1, wire.ReasonInconsistent,
			"ERF record in a file of link type %d", w.link)
	}
	if err := PutERFHeader(w.hdr[pcapRecordHeaderSize:], ts, erfType, iface, len(data)); err != nil {
		return err
	}
	if err := w.putRecordHeader(ts, ERFHeaderSize+len(data)); err != nil {
		return err
	}
	if _, err := w.bw.Write(w.hdr[:]); err != nil {
		return err
	}
	_, err := w.bw.Write(data)
	return err
}

// Flush writes buffered records to the underlying writer.
func (w *PcapWriter) Flush() error { return w.bw.Flush() }

// Close flushes and makes later writes fail. It does not close the
// underlying io.Writer.
func (w *PcapWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	return w.bw.Flush()
}

// pcapReader reads classic pcap after Open has consumed the magic.
type pcapReader struct {
	r       io.Reader
	order   binary.ByteOrder
	nano    bool
	link    LinkType
	snaplen uint32
	off     int // file offset of the next record
	n       int // records read
	hdr     [pcapRecordHeaderSize]byte
	buf     []byte
}

func newPcapReader(r io.Reader, first [4]byte) (*pcapReader, error) {
	pr := &pcapReader{r: r}
	switch {
	case binary.LittleEndian.Uint32(first[:]) == pcapMagicMicro:
		pr.order = binary.LittleEndian
	case binary.LittleEndian.Uint32(first[:]) == pcapMagicNano:
		pr.order, pr.nano = binary.LittleEndian, true
	case binary.BigEndian.Uint32(first[:]) == pcapMagicMicro:
		pr.order = binary.BigEndian
	case binary.BigEndian.Uint32(first[:]) == pcapMagicNano:
		pr.order, pr.nano = binary.BigEndian, true
	default:
		return nil, wire.Errorf("pcap file header", "magic", 0, wire.ReasonInvalid, "unknown magic % x", first[:])
	}
	var h [pcapFileHeaderSize - 4]byte
	if n, err := io.ReadFull(r, h[:]); err != nil {
		return nil, wire.Truncated("pcap file header", "linktype", 0, pcapFileHeaderSize, 4+n)
	}
	if major := pr.order.Uint16(h[0:]); major != 2 {
		return nil, wire.Errorf("pcap file header", "version_major", 4, wire.ReasonUnsupported,
			"version %d, only 2 is defined", major)
	}
	pr.snaplen = pr.order.Uint32(h[12:])
	// The low 16 bits are the link type; bits 16-27 must be zero and bits
	// 28-31 describe the FCS, which we do not strip (we never write one).
	lt := pr.order.Uint32(h[16:])
	if lt&0x0FFF0000 != 0 {
		return nil, wire.Errorf("pcap file header", "linktype", 20, wire.ReasonInvalid,
			"reserved bits set in 0x%08x", lt)
	}
	pr.link = LinkType(lt)
	pr.off = pcapFileHeaderSize
	return pr, nil
}

// name is the record's name in errors ("pcap record 3"), built only on
// the error path.
func (pr *pcapReader) name() string { return "pcap record " + itoa(pr.n+1) }

func (pr *pcapReader) next(rec *Record) error {
	n, err := io.ReadFull(pr.r, pr.hdr[:])
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return wire.Truncated(pr.name(), "orig_len", pr.off, pcapRecordHeaderSize, n)
	}
	sec := pr.order.Uint32(pr.hdr[0:])
	frac := pr.order.Uint32(pr.hdr[4:])
	incl := pr.order.Uint32(pr.hdr[8:])
	orig := pr.order.Uint32(pr.hdr[12:])
	ns := int64(frac)
	if pr.nano {
		if frac >= 1_000_000_000 {
			return wire.Errorf(pr.name(), "ts_nsec", pr.off+4, wire.ReasonInvalid, "%d ns is not below one second", frac)
		}
	} else {
		if frac >= 1_000_000 {
			return wire.Errorf(pr.name(), "ts_usec", pr.off+4, wire.ReasonInvalid, "%d µs is not below one second", frac)
		}
		ns *= 1000
	}
	if incl > MaxRecordSize {
		return wire.Errorf(pr.name(), "incl_len", pr.off+8, wire.ReasonInvalid,
			"%d bytes exceeds the %d-byte limit", incl, MaxRecordSize)
	}
	if incl > orig {
		return wire.Errorf(pr.name(), "incl_len", pr.off+8, wire.ReasonInconsistent,
			"captured %d bytes of a %d-byte packet", incl, orig)
	}
	buf, n, err := readFullGrow(pr.r, pr.buf[:0], 0, int(incl))
	pr.buf = buf
	if err != nil {
		return wire.Truncated(pr.name(), "data", pr.off+pcapRecordHeaderSize, int(incl), n)
	}
	*rec = Record{LinkType: pr.link, Timestamp: time.Unix(int64(sec), ns),
		OrigLen: int(orig), Data: pr.buf, Raw: pr.buf}
	dataOff := pr.off + pcapRecordHeaderSize
	pr.off = dataOff + int(incl)
	pr.n++
	return finishRecord(rec, dataOff)
}

// finishRecord strips the ERF header from ERF records.
func finishRecord(rec *Record, off int) error {
	if rec.LinkType != LinkTypeERF {
		return nil
	}
	body, err := ParseERF(rec.Raw, &rec.ERF, off)
	if err != nil {
		return err
	}
	rec.Data = body
	rec.OrigLen = int(rec.ERF.WLen)
	return nil
}
