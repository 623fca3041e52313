package rt

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// TSO/GSO segmentation, as a NIC does it: the kernel hands a TAP opened
// with IFF_VNET_HDR and TUN_F_TSO4/TSO6/USO4/USO6 one large frame plus a
// virtio_net_hdr saying how to cut it (include/linux/virtio_net.h,
// Documentation/networking/segmentation-offloads.rst). Each segment gets
// a copy of the headers with the per-segment fields fixed: IPv4 total
// length, identification (+1 per segment, as Linux TSO does) and header
// checksum; IPv6 payload length; TCP sequence number, the FIN and PSH flags
// on the last segment only and CWR on the first only (RFC 3168 §6.1.2);
// UDP length; and a full TCP/UDP checksum with the pseudo-header.

const (
	etherTypeIPv4  = 0x0800
	etherTypeIPv6  = 0x86DD
	etherTypeVLAN  = 0x8100
	etherTypeQinQ  = 0x88A8
	ipProtoTCP     = 6
	ipProtoUDP     = 17
	tcpFlagFIN     = 0x01
	tcpFlagPSH     = 0x08
	tcpFlagCWR     = 0x80
	tcpChecksumOff = 16
	udpChecksumOff = 6
)

// Bounds on what a sane kernel sends (Linux TCP's smallest MSS is 48,
// 64 KiB / 48 = 1366 segments; headers are at most 18 + 60 + 60 bytes
// without IPv6 extension headers). They keep a hostile or corrupted header
// from making one frame cost quadratic time.
const (
	maxGSOHeaders  = 512
	maxGSOSegments = 4096
)

// Segmentation errors; the TAP counts them as drops of the whole frame.
var (
	errVnetMalformed   = errors.New("rt: malformed frame for its virtio_net_hdr")
	errVnetUnsupported = errors.New("rt: unsupported virtio_net_hdr gso_type")
)

// segmenter cuts one TSO/GSO frame into link-MTU segments, one per emit.
type segmenter struct {
	pkt   []byte // the whole frame, Ethernet header first
	l3    int    // IP header offset
	l4    int    // TCP/UDP header offset
	pay   int    // payload offset (end of headers)
	v6    bool
	proto uint8
	mss   int
	next  int // payload offset of the next segment
	idx   int // index of the next segment
	id    uint16
	seq   uint32
}

// pending reports whether segments remain.
func (s *segmenter) pending() bool { return s.pkt != nil && s.next < len(s.pkt) }

// reset drops the frame.
func (s *segmenter) reset() { *s = segmenter{} }

// l3Offset finds the IP header after the Ethernet header (and one 802.1Q or
// 802.1ad tag) and returns its offset and ethertype.
func l3Offset(pkt []byte) (int, uint16, error) {
	if len(pkt) < 14 {
		return 0, 0, errVnetMalformed
	}
	et := binary.BigEndian.Uint16(pkt[12:])
	off := 14
	if et == etherTypeVLAN || et == etherTypeQinQ {
		if len(pkt) < 18 {
			return 0, 0, errVnetMalformed
		}
		et = binary.BigEndian.Uint16(pkt[16:])
		off = 18
	}
	return off, et, nil
}

// start validates pkt against its header h and prepares it for emit.
// mtu is the link's L3 MTU: segments never exceed it even if the kernel's
// gso_size would (a TAP MTU larger than the link's). mtu <= 0 trusts
// gso_size.
func (s *segmenter) start(h VnetHdr, pkt []byte, mtu int) error {
	s.reset()
	kind := h.GSOKind()
	switch kind {
	case unix.VIRTIO_NET_HDR_GSO_TCPV4, unix.VIRTIO_NET_HDR_GSO_TCPV6:
		s.proto = ipProtoTCP
	case unix.VIRTIO_NET_HDR_GSO_UDP_L4:
		s.proto = ipProtoUDP
	default:
		return fmt.Errorf("%w: %#x", errVnetUnsupported, h.GSOType())
	}
	l3, et, err := l3Offset(pkt)
	if err != nil {
		return err
	}
	s.l3 = l3
	switch et {
	case etherTypeIPv4:
		if kind == unix.VIRTIO_NET_HDR_GSO_TCPV6 || len(pkt) < l3+20 || pkt[l3]>>4 != 4 {
			return errVnetMalformed
		}
		ihl := int(pkt[l3]&0x0f) * 4
		if ihl < 20 || len(pkt) < l3+ihl || pkt[l3+9] != s.proto {
			return errVnetMalformed
		}
		s.l4 = l3 + ihl
		s.id = binary.BigEndian.Uint16(pkt[l3+4:])
	case etherTypeIPv6:
		if kind == unix.VIRTIO_NET_HDR_GSO_TCPV4 || len(pkt) < l3+40 || pkt[l3]>>4 != 6 {
			return errVnetMalformed
		}
		s.v6 = true
		s.l4 = l3 + 40
		if pkt[l3+6] != s.proto {
			// Extension headers: the kernel's csum_start points at the
			// transport header.
			cs := int(h.CsumStart())
			if !h.NeedsCsum() || cs < l3+40 || cs >= len(pkt) {
				return errVnetMalformed
			}
			s.l4 = cs
		}
	default:
		return errVnetMalformed
	}
	if s.proto == ipProtoTCP {
		if len(pkt) < s.l4+20 {
			return errVnetMalformed
		}
		doff := int(pkt[s.l4+12]>>4) * 4
		if doff < 20 || len(pkt) < s.l4+doff {
			return errVnetMalformed
		}
		s.pay = s.l4 + doff
		s.seq = binary.BigEndian.Uint32(pkt[s.l4+4:])
	} else {
		if len(pkt) < s.l4+8 {
			return errVnetMalformed
		}
		s.pay = s.l4 + 8
	}
	s.mss = int(h.GSOSize())
	if mtu > 0 {
		s.mss = min(s.mss, mtu-(s.pay-s.l3))
	}
	if s.mss <= 0 || s.pay > maxGSOHeaders || (len(pkt)-s.pay)/s.mss > maxGSOSegments {
		return errVnetMalformed
	}
	s.pkt = pkt
	s.next = s.pay
	if s.next == len(pkt) {
		// No payload: one segment of headers only (e.g. a bare FIN).
		s.next--
		s.mss = 0
	}
	return nil
}

// emit writes the next segment into dst and returns its length, or an
// error if dst is too small (the segment is skipped).
func (s *segmenter) emit(dst []byte) (int, error) {
	first := s.idx == 0
	segStart := s.next
	segLen := min(s.mss, len(s.pkt)-segStart)
	if s.mss == 0 {
		segStart, segLen = s.pay, 0
	}
	last := segStart+segLen >= len(s.pkt)
	total := s.pay + segLen
	idx := s.idx
	s.next = segStart + max(segLen, 1)
	if last {
		s.next = len(s.pkt)
	}
	s.idx++
	if len(dst) < total {
		return 0, ErrFrameTooLarge
	}
	copy(dst, s.pkt[:s.pay])
	copy(dst[s.pay:], s.pkt[segStart:segStart+segLen])
	ip := dst[s.l3:]
	var src, dstAddr []byte
	if s.v6 {
		binary.BigEndian.PutUint16(ip[4:], uint16(total-s.l3-40))
		src, dstAddr = ip[8:24], ip[24:40]
	} else {
		binary.BigEndian.PutUint16(ip[2:], uint16(total-s.l3))
		binary.BigEndian.PutUint16(ip[4:], s.id+uint16(idx))
		ihl := s.l4 - s.l3
		binary.BigEndian.PutUint16(ip[10:], ipv4HeaderChecksum(ip[:ihl]))
		src, dstAddr = ip[12:16], ip[16:20]
	}
	l4 := dst[s.l4:total]
	var ckOff int
	if s.proto == ipProtoTCP {
		binary.BigEndian.PutUint32(l4[4:], s.seq+uint32(segStart-s.pay))
		if !last {
			l4[13] &^= tcpFlagFIN | tcpFlagPSH
		}
		if !first {
			l4[13] &^= tcpFlagCWR
		}
		ckOff = tcpChecksumOff
	} else {
		binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
		ckOff = udpChecksumOff
	}
	l4[ckOff], l4[ckOff+1] = 0, 0
	ck := ^csumFold(csumAdd(pseudoHeaderSum(src, dstAddr, s.proto, len(l4)), l4))
	if ck == 0 && s.proto == ipProtoUDP {
		ck = 0xffff // RFC 768: zero means "no checksum"
	}
	binary.BigEndian.PutUint16(l4[ckOff:], ck)
	return total, nil
}

// completeChecksum finishes a CHECKSUM_PARTIAL frame (VIRTIO_NET_HDR_F_
// NEEDS_CSUM without GSO): the kernel stored the pseudo-header sum in the
// checksum field; the "hardware" sums from csum_start to the end and
// stores the complement at csum_start+csum_offset, as skb_checksum_help
// does (a zero result is sent as 0xffff, CSUM_MANGLED_0).
func completeChecksum(h VnetHdr, pkt []byte) error {
	start, off := int(h.CsumStart()), int(h.CsumOffset())
	if start >= len(pkt) || start+off+2 > len(pkt) {
		return errVnetMalformed
	}
	ck := ^csumFold(csumAdd(0, pkt[start:]))
	if ck == 0 {
		ck = 0xffff
	}
	binary.BigEndian.PutUint16(pkt[start+off:], ck)
	return nil
}
