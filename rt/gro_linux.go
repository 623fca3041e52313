package rt

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Segment coalescing towards a TAP, the inverse of gso_linux.go and what
// a NIC's receive offload (LRO/GRO) does before the kernel sees a frame.
//
// Every frame costs the kernel one write(2), one sk_buff and one pass
// through its receive path up to the socket, all charged to the writer;
// at 1500 bytes that caps a TAP at about 2 Gb/s on one core. So
// consecutive TCP (or UDP) segments of one flow that leave on the same TAP
// are written as one frame with a virtio_net_hdr asking for GSO
// (include/uapi/linux/virtio_net.h): the kernel delivers it to a local
// socket as is, as if its own GRO had merged the segments, and segments it
// with skb_segment if it forwards it. A merged train is exactly the
// segments it came from: the rules below are those under which the
// kernel's segmentation (tcp_gso_segment, __udp_gso_segment,
// inet_gso_segment, ipv6_gso_segment) regenerates every segment byte for
// byte, and they are the rules Linux GRO merges by (tcp_gro_receive,
// inet_gro_receive; wireguard-go's tun/offload_linux.go does the same for
// its TUN).
//
//   - Same Ethernet header (and 802.1Q tag), same IP header except IPv4
//     total length, identification and header checksum (IPv6: payload
//     length); IPv4 identifications consecutive (segmentation increments
//     them), not a fragment.
//   - TCP: same ports, ACK number, data offset, window, urgent pointer and
//     options (timestamps included); sequence numbers contiguous; no SYN,
//     RST or URG; CWR only on the first segment (VIRTIO_NET_HDR_GSO_ECN),
//     PSH and FIN only on the last.
//   - UDP: same ports, checksum in use.
//   - Every segment carries the first one's payload length except the
//     last, which may be shorter; segments carry payload.
//   - Every segment's checksums verify. The merged frame asks the kernel
//     to complete its checksum (VIRTIO_NET_HDR_F_NEEDS_CSUM), which it then
//     never verifies, so a segment corrupted on the emulated wire is never
//     merged: it goes out on its own and the receiving stack drops it as a
//     NIC-delivered frame with a bad checksum.
//   - At most groMaxSegments segments and 64 KiB of IP packet.

// groMaxSegments bounds a merged train: UDP_MAX_SEGMENTS is 64 on older
// kernels (128 since 6.2) and virtio_net_hdr_to_skb rejects longer UDP
// trains; 64 segments of 1448 bytes exceed 64 KiB anyway.
const groMaxSegments = 64

// groMaxIP is the largest merged IP packet: the 16-bit IPv4 total length
// and IPv6 payload length.
const groMaxIP = 65535

// TCP flags a merged train never carries (RFC 9293 §3.1).
const (
	tcpFlagSYN = 0x02
	tcpFlagRST = 0x04
	tcpFlagURG = 0x20
)

// groSeg is a parsed candidate segment.
type groSeg struct {
	l3, l4, pay int // header offsets in the frame; pay is the payload
	v6          bool
	proto       uint8
	flags       uint8 // TCP flags
}

// parseGROSeg reports whether frame b may take part in a merged train
// and where its headers are. It validates what the merge relies on,
// including the IPv4 header checksum and the TCP/UDP checksum.
func parseGROSeg(b []byte) (groSeg, bool) {
	var s groSeg
	l3, et, err := l3Offset(b)
	if err != nil {
		return s, false
	}
	s.l3 = l3
	ip := b[l3:]
	var src, dst []byte
	switch et {
	case etherTypeIPv4:
		if len(ip) < 20 || ip[0]>>4 != 4 {
			return s, false
		}
		ihl := int(ip[0]&0x0f) * 4
		if ihl < 20 || len(ip) < ihl || int(binary.BigEndian.Uint16(ip[2:])) != len(ip) {
			return s, false // also an Ethernet-padded frame: its length is not the packet's
		}
		if binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
			return s, false // MF or a fragment offset
		}
		if csumFold(csumAdd(0, ip[:ihl])) != 0xffff {
			return s, false
		}
		s.proto, s.l4 = ip[9], l3+ihl
		src, dst = ip[12:16], ip[16:20]
	case etherTypeIPv6:
		if len(ip) < 40 || ip[0]>>4 != 6 || int(binary.BigEndian.Uint16(ip[4:]))+40 != len(ip) {
			return s, false
		}
		s.v6, s.proto, s.l4 = true, ip[6], l3+40 // extension headers: not a candidate (proto check)
		src, dst = ip[8:24], ip[24:40]
	default:
		return s, false
	}
	l4 := b[s.l4:]
	switch s.proto {
	case ipProtoTCP:
		if len(l4) < 20 {
			return s, false
		}
		doff := int(l4[12]>>4) * 4
		if doff < 20 || len(l4) <= doff {
			return s, false // no payload: a pure ACK is never merged
		}
		s.flags = l4[13]
		if s.flags&(tcpFlagSYN|tcpFlagRST|tcpFlagURG) != 0 {
			return s, false
		}
		s.pay = s.l4 + doff
	case ipProtoUDP:
		if len(l4) <= 8 || int(binary.BigEndian.Uint16(l4[4:])) != len(l4) {
			return s, false
		}
		if binary.BigEndian.Uint16(l4[udpChecksumOff:]) == 0 {
			return s, false // no checksum (IPv4): merging would add one
		}
		s.pay = s.l4 + 8
	default:
		return s, false
	}
	if csumFold(csumAdd(pseudoHeaderSum(src, dst, s.proto, len(l4)), l4)) != 0xffff {
		return s, false
	}
	return s, true
}

// coalescer builds one merged train in buf: a virtio_net_hdr, the first
// segment's headers, then every segment's payload.
type coalescer struct {
	buf     []byte
	n       int // bytes of buf in use, vnet header included
	segs    int
	first   groSeg
	gsoSize int
	nextSeq uint32 // TCP: sequence number the next segment must carry
	nextID  uint16 // IPv4: identification the next segment must carry
	last    uint8  // TCP flags of the last segment (PSH/FIN)
	closed  bool   // no segment may follow (a short one, PSH or FIN)
}

// newCoalescer allocates a train buffer for frames of up to 64 KiB of IP
// packet.
func newCoalescer() coalescer {
	return coalescer{buf: make([]byte, VnetHdrLen+groMaxIP+64)}
}

// pending reports whether a train is being built.
func (c *coalescer) pending() bool { return c.segs > 0 }

// frameLen is the length of the frame built so far (no vnet header).
func (c *coalescer) frameLen() int { return c.n - VnetHdrLen }

// start begins a train with frame b (s as parsed). The caller has
// finished any previous train.
func (c *coalescer) start(b []byte, s groSeg) {
	c.first, c.segs = s, 1
	c.n = VnetHdrLen + copy(c.buf[VnetHdrLen:], b)
	c.gsoSize = len(b) - s.pay
	c.last = s.flags
	c.closed = s.flags&(tcpFlagPSH|tcpFlagFIN) != 0
	if s.proto == ipProtoTCP {
		c.nextSeq = binary.BigEndian.Uint32(b[s.l4+4:]) + uint32(c.gsoSize)
	}
	if !s.v6 {
		c.nextID = binary.BigEndian.Uint16(b[s.l3+4:]) + 1
	}
}

// add appends frame b (s as parsed) to the train if it continues it, and
// reports whether it did.
func (c *coalescer) add(b []byte, s groSeg) bool {
	f := &c.first
	pl := len(b) - s.pay
	if c.closed || c.segs >= groMaxSegments || s.pay != f.pay || s.l4 != f.l4 ||
		s.proto != f.proto || s.v6 != f.v6 || pl > c.gsoSize ||
		c.frameLen()-f.l3+pl > groMaxIP {
		return false
	}
	h := c.buf[VnetHdrLen:]
	// Ethernet header (and tag) as a whole.
	if string(b[:f.l3]) != string(h[:f.l3]) {
		return false
	}
	ip, hip := b[f.l3:f.l4], h[f.l3:f.l4]
	if f.v6 {
		if string(ip[:4]) != string(hip[:4]) || string(ip[6:]) != string(hip[6:]) {
			return false
		}
	} else {
		if string(ip[:2]) != string(hip[:2]) || string(ip[6:10]) != string(hip[6:10]) ||
			string(ip[12:]) != string(hip[12:]) || binary.BigEndian.Uint16(ip[4:]) != c.nextID {
			return false
		}
	}
	l4, hl4 := b[f.l4:f.pay], h[f.l4:f.pay]
	if f.proto == ipProtoTCP {
		if string(l4[:4]) != string(hl4[:4]) || binary.BigEndian.Uint32(l4[4:]) != c.nextSeq ||
			string(l4[8:13]) != string(hl4[8:13]) || string(l4[14:16]) != string(hl4[14:16]) ||
			string(l4[18:]) != string(hl4[18:]) {
			return false
		}
		// The flags other than PSH and FIN equal the first segment's
		// without CWR (segmentation clears CWR after the first).
		if s.flags&^(tcpFlagPSH|tcpFlagFIN) != c.first.flags&^(tcpFlagPSH|tcpFlagFIN|tcpFlagCWR) {
			return false
		}
		c.nextSeq += uint32(pl)
		c.last = s.flags
		if s.flags&(tcpFlagPSH|tcpFlagFIN) != 0 {
			c.closed = true
		}
	} else if string(l4[:4]) != string(hl4[:4]) {
		return false
	}
	c.n += copy(c.buf[c.n:], b[s.pay:])
	c.nextID++
	c.segs++
	if pl < c.gsoSize {
		c.closed = true
	}
	return true
}

// finish completes the train and returns it, vnet header first, ready
// for one write(2); the coalescer is empty afterwards (the returned bytes
// stay valid until the next start). A single segment goes out as it came,
// with a zeroed header.
func (c *coalescer) finish() []byte {
	out := c.buf[:c.n]
	segs := c.segs
	c.segs, c.n = 0, 0
	hdr := VnetHdr(out[:VnetHdrLen])
	if segs == 1 {
		clear(hdr)
		return out
	}
	f := &c.first
	pkt := out[VnetHdrLen:]
	ip := pkt[f.l3:]
	l4len := len(pkt) - f.l4
	var src, dst []byte
	fields := VnetFields{
		Flags:      unix.VIRTIO_NET_HDR_F_NEEDS_CSUM,
		HdrLen:     uint16(f.pay),
		GSOSize:    uint16(c.gsoSize),
		CsumStart:  uint16(f.l4),
		CsumOffset: tcpChecksumOff,
	}
	if f.v6 {
		binary.BigEndian.PutUint16(ip[4:], uint16(len(ip)-40))
		src, dst = ip[8:24], ip[24:40]
		fields.GSOType = unix.VIRTIO_NET_HDR_GSO_TCPV6
	} else {
		binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
		ihl := f.l4 - f.l3
		binary.BigEndian.PutUint16(ip[10:], ipv4HeaderChecksum(ip[:ihl]))
		src, dst = ip[12:16], ip[16:20]
		fields.GSOType = unix.VIRTIO_NET_HDR_GSO_TCPV4
	}
	l4 := pkt[f.l4:]
	if f.proto == ipProtoTCP {
		// Flags of the train: the first segment's (CWR included) and the
		// last one's PSH and FIN, which segmentation leaves on the last.
		l4[13] = f.flags | c.last&(tcpFlagPSH|tcpFlagFIN)
		if f.flags&tcpFlagCWR != 0 {
			fields.GSOType |= unix.VIRTIO_NET_HDR_GSO_ECN
		}
	} else {
		// The train's UDP length is the whole; __udp_gso_segment sets each
		// segment's.
		binary.BigEndian.PutUint16(l4[4:], uint16(l4len))
		fields.GSOType = unix.VIRTIO_NET_HDR_GSO_UDP_L4
		fields.CsumOffset = udpChecksumOff
	}
	// CHECKSUM_PARTIAL: the checksum field holds the folded pseudo-header
	// sum, not complemented (as tcp_v4_send_check leaves it).
	ck := fields.CsumStart + fields.CsumOffset
	binary.BigEndian.PutUint16(pkt[ck:], csumFold(pseudoHeaderSum(src, dst, f.proto, l4len)))
	hdr.Encode(&fields)
	return out
}
