// Package capture writes and reads packet capture files: classic pcap
// (microsecond and nanosecond variants, either byte order), pcapng (several
// interfaces with their own link types in one file, per-packet comments,
// nanosecond timestamps) and ERF records, the framing Wireshark needs to open
// native InfiniBand (data and link packets) inside link type 197.
//
// Writers are buffered, take any io.Writer, and allocate nothing per packet
// once their scratch buffers have grown; Flush pushes buffered bytes out and
// Close flushes and refuses further writes (neither closes the io.Writer,
// which the caller owns). Readers detect the format from the first bytes
// (Open) and return one Record at a time; a damaged file yields a
// *wire.Error naming the block or record and the field, never a panic.
//
// Frames are written without an Ethernet FCS.
package capture

import "time"

// LinkType is a pcap / pcapng link-layer header type (tcpdump.org
// "LINK-LAYER HEADER TYPES").
type LinkType uint16

const (
	LinkTypeEthernet   LinkType = 1   // IEEE 802.3 Ethernet, no FCS
	LinkTypeUser0      LinkType = 147 // DLT_USER0, private use
	LinkTypeERF        LinkType = 197 // Endace ERF records
	LinkTypeInfiniBand LinkType = 247 // raw IB packets starting at the LRH
)

func (l LinkType) String() string {
	switch l {
	case LinkTypeEthernet:
		return "Ethernet"
	case LinkTypeUser0:
		return "USER0"
	case LinkTypeERF:
		return "ERF"
	case LinkTypeInfiniBand:
		return "InfiniBand"
	}
	return "linktype(" + itoa(int(l)) + ")"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// DefaultSnapLen is the snapshot length written into file headers: large
// enough for any jumbo frame, the value tcpdump uses.
const DefaultSnapLen = 262144

// MaxRecordSize bounds the captured length a reader accepts for one record,
// so a corrupt length field cannot make it allocate gigabytes.
const MaxRecordSize = 16 << 20

// Record is one packet read from a capture file.
//
// Data and Raw alias the reader's buffer and are valid only until the next
// call to Next; copy them to keep them.
type Record struct {
	LinkType  LinkType
	Interface int // pcapng interface ID; 0 for classic pcap
	Timestamp time.Time
	// OrigLen is the packet's length on the wire as the file states it
	// (pcap orig_len / EPB original length). For ERF records it is the
	// ERF wlen: the length of the packet inside the record.
	OrigLen int
	// Data is the packet. For LinkTypeERF it is the packet inside the ERF
	// record, with the ERF header (and any extension headers and record
	// padding beyond wlen) stripped.
	Data []byte
	// Raw is the record's captured bytes as stored in the file, ERF
	// header included.
	Raw []byte
	// Comment is the pcapng opt_comment of the packet ("" if none).
	Comment string
	// ERF is the decoded ERF header when LinkType is LinkTypeERF.
	ERF ERFHeader
}
