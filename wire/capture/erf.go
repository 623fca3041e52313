package capture

import (
	"encoding/binary"
	"time"

	"github.com/emufabric/emufabric/wire"
)

// ERF (Endace Extensible Record Format) record header, 16 bytes, as in the
// Endace "ERF types" reference and Wireshark's wiretap/erf.c:
//
//	0      8 bytes  timestamp, little-endian 32.32 fixed point (seconds since
//	                1970 in the high word, binary fraction in the low word)
//	8      1 byte   type (bit 7: an extension header follows)
//	9      1 byte   flags (bits 0-1 capture interface, bit 2 varying-length
//	                record, bit 3 truncated, bit 4 rx error, ...)
//	10     2 bytes  rlen, big-endian: record length, header and padding included
//	12     2 bytes  lctr, big-endian: loss counter / colour
//	14     2 bytes  wlen, big-endian: length of the packet on the wire
//
// Mellanox's ibdump stores native InfiniBand this way, type 21 for data
// packets (LRH first) and type 25 for link packets, inside pcap link type
// 197; Wireshark 4.0 opens it, whereas it cannot open link type 247.
const (
	ERFHeaderSize = 16

	ERFTypeInfiniBand     = 21 // TYPE_INFINIBAND: IB data packet from the LRH
	ERFTypeInfiniBandLink = 25 // TYPE_INFINIBAND_LINK: IB link (flow-control) packet

	ERFFlagIfaceMask = 0x03 // capture interface 0..3
	ERFFlagVarLen    = 0x04 // varying-length record (always set by modern cards)
	ERFFlagTrunc     = 0x08 // record truncated (not written by us)

	// IBLinkPadSize is what a capture asked to pad link packets
	// ("pad_links", --capture-pad-links, --pad-links) writes each one
	// zero-padded to, the real 6 bytes first: Wireshark 4.0's
	// infiniband_link dissector reads 8 (sometimes 48) bytes of LRH-like
	// data before the link fields and shows a correct 6-byte record as
	// Malformed.
	IBLinkPadSize = 64

	erfTypeExtBit = 0x80
	erfExtSize    = 8
	erfMaxRecord  = 0xFFFF
)

// ERFHeader is a decoded ERF record header.
type ERFHeader struct {
	Timestamp time.Time
	Type      uint8 // record type without the extension bit
	Flags     uint8
	RLen      uint16
	LCtr      uint16
	WLen      uint16
	HdrLen    int // 16 plus 8 per extension header
}

// Iface is the capture interface number held in the flags.
func (h *ERFHeader) Iface() uint8 { return h.Flags & ERFFlagIfaceMask }

// ERFTimestamp converts t to ERF's 32.32 fixed point, rounding the fraction
// to the nearest 2^-32 s. Times before 1970 or after 2106 wrap.
func ERFTimestamp(t time.Time) uint64 {
	sec := uint64(t.Unix())
	frac := (uint64(t.Nanosecond())<<32 + 500_000_000) / 1_000_000_000
	return sec<<32 + frac
}

// ERFTime converts an ERF 32.32 timestamp to a time.Time, rounding to the
// nearest nanosecond. Round trips through ERFTimestamp are exact.
func ERFTime(ts uint64) time.Time {
	sec := int64(ts >> 32)
	ns := ((ts&0xFFFFFFFF)*1_000_000_000 + 1<<31) >> 32
	return time.Unix(sec, int64(ns))
}

// PutERFHeader writes the 16-byte ERF header of a record that carries n
// packet bytes: rlen = 16 + n, wlen = n, flags = varying length | iface, no
// extension headers and no padding, as ibdump writes them. b must hold
// ERFHeaderSize bytes. It fails if the record would exceed 65535 bytes.
func PutERFHeader(b []byte, ts time.Time, erfType, iface uint8, n int) error {
	if n < 0 || n+ERFHeaderSize > erfMaxRecord {
		return wire.Errorf("ERF", "rlen", -1, wire.ReasonInvalid,
			"a %d-byte packet does not fit in an ERF record (max %d)", n, erfMaxRecord-ERFHeaderSize)
	}
	binary.LittleEndian.PutUint64(b[0:], ERFTimestamp(ts))
	b[8] = erfType &^ erfTypeExtBit
	b[9] = ERFFlagVarLen | iface&ERFFlagIfaceMask
	binary.BigEndian.PutUint16(b[10:], uint16(ERFHeaderSize+n))
	binary.BigEndian.PutUint16(b[12:], 0)
	binary.BigEndian.PutUint16(b[14:], uint16(n))
	return nil
}

// ParseERF decodes the ERF record rec (as stored in a pcap or pcapng packet)
// into h and returns the packet it carries: the bytes after the header and
// extension headers, cut to wlen (record padding dropped). offset is rec's
// position in the file, used in errors.
//
// A record whose captured part is shorter than wlen is returned as far as it
// goes (a capture may be truncated); one shorter than its own headers, or
// whose rlen disagrees with the bytes present, is an error.
func ParseERF(rec []byte, h *ERFHeader, offset int) ([]byte, error) {
	if len(rec) < ERFHeaderSize {
		return nil, wire.Truncated("ERF", "wlen", offset, ERFHeaderSize, len(rec))
	}
	*h = ERFHeader{
		Timestamp: ERFTime(binary.LittleEndian.Uint64(rec[0:])),
		Type:      rec[8] &^ erfTypeExtBit,
		Flags:     rec[9],
		RLen:      binary.BigEndian.Uint16(rec[10:]),
		LCtr:      binary.BigEndian.Uint16(rec[12:]),
		WLen:      binary.BigEndian.Uint16(rec[14:]),
		HdrLen:    ERFHeaderSize,
	}
	more := rec[8]&erfTypeExtBit != 0
	for more {
		if len(rec) < h.HdrLen+erfExtSize {
			return nil, wire.Truncated("ERF", "extension header", offset+h.HdrLen, h.HdrLen+erfExtSize, len(rec))
		}
		more = rec[h.HdrLen]&erfTypeExtBit != 0
		h.HdrLen += erfExtSize
	}
	if int(h.RLen) < h.HdrLen {
		return nil, wire.Errorf("ERF", "rlen", offset+10, wire.ReasonInvalid,
			"rlen %d is shorter than the %d-byte header", h.RLen, h.HdrLen)
	}
	if int(h.RLen) < len(rec) {
		return nil, wire.Errorf("ERF", "rlen", offset+10, wire.ReasonInconsistent,
			"rlen %d, but the record holds %d bytes", h.RLen, len(rec))
	}
	body := rec[h.HdrLen:]
	if int(h.WLen) < len(body) {
		body = body[:h.WLen]
	}
	return body, nil
}
