package rt

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"
)

// The reference segments are built independently with gopacket (its own
// length fields and checksums), and compared byte for byte with ours.

type gsoCase struct {
	name    string
	v6      bool
	udp     bool
	payload int
	mss     int
	mtu     int // link L3 MTU given to the segmenter (0: trust gso_size)
	flags   uint8
	vlan    bool
}

const (
	flFIN = 0x01
	flPSH = 0x08
	flACK = 0x10
	flCWR = 0x80
)

var (
	srcMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	dstMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 2}
	src4   = net.IPv4(10, 0, 0, 1).To4()
	dst4   = net.IPv4(10, 0, 0, 2).To4()
	src6   = net.ParseIP("fd00::1")
	dst6   = net.ParseIP("fd00::2")
)

// buildFrame serializes one frame with gopacket; seqOff and idOff shift
// the TCP sequence and IPv4 ID, flags are TCP flags.
func buildFrame(t testing.TB, c gsoCase, payload []byte, seqOff uint32, idOff uint16, flags uint8) []byte {
	t.Helper()
	var ls []gopacket.SerializableLayer
	eth := &layers.Ethernet{SrcMAC: srcMAC, DstMAC: dstMAC, EthernetType: layers.EthernetTypeIPv4}
	if c.v6 {
		eth.EthernetType = layers.EthernetTypeIPv6
	}
	if c.vlan {
		et := eth.EthernetType
		eth.EthernetType = layers.EthernetTypeDot1Q
		ls = append(ls, eth, &layers.Dot1Q{VLANIdentifier: 7, Priority: 3, Type: et})
	} else {
		ls = append(ls, eth)
	}
	proto := layers.IPProtocolTCP
	if c.udp {
		proto = layers.IPProtocolUDP
	}
	var nl gopacket.NetworkLayer
	if c.v6 {
		ip := &layers.IPv6{Version: 6, TrafficClass: 0x02, HopLimit: 64, NextHeader: proto, SrcIP: src6, DstIP: dst6}
		ls, nl = append(ls, ip), ip
	} else {
		ip := &layers.IPv4{Version: 4, TTL: 64, TOS: 0x02, Id: 0x1234 + idOff, Flags: layers.IPv4DontFragment, Protocol: proto, SrcIP: src4, DstIP: dst4}
		ls, nl = append(ls, ip), ip
	}
	if c.udp {
		u := &layers.UDP{SrcPort: 40000, DstPort: 5201}
		u.SetNetworkLayerForChecksum(nl)
		ls = append(ls, u)
	} else {
		tcp := &layers.TCP{SrcPort: 40000, DstPort: 5201, Seq: 0xfffff000 + seqOff, Ack: 77, Window: 512,
			FIN: flags&flFIN != 0, PSH: flags&flPSH != 0, ACK: flags&flACK != 0, CWR: flags&flCWR != 0,
			Options: []layers.TCPOption{{OptionType: layers.TCPOptionKindNop}, {OptionType: layers.TCPOptionKindNop},
				{OptionType: layers.TCPOptionKindTimestamps, OptionLength: 10, OptionData: []byte{1, 2, 3, 4, 5, 6, 7, 8}}}}
		tcp.SetNetworkLayerForChecksum(nl)
		ls = append(ls, tcp)
	}
	ls = append(ls, gopacket.Payload(payload))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(buf.Bytes())
}

// superFrame builds the kernel's view: the whole payload in one frame,
// the checksum field holding the pseudo-header sum (CHECKSUM_PARTIAL) and
// a vnet header asking for segmentation.
func superFrame(t testing.TB, c gsoCase, payload []byte) (VnetHdr, []byte) {
	pkt := buildFrame(t, c, payload, 0, 0, c.flags)
	l3, _, err := l3Offset(pkt)
	if err != nil {
		t.Fatal(err)
	}
	l4 := l3 + 20
	if c.v6 {
		l4 = l3 + 40
	}
	ckOff, hdr := tcpChecksumOff, 32
	kind := uint8(unix.VIRTIO_NET_HDR_GSO_TCPV4)
	if c.v6 {
		kind = unix.VIRTIO_NET_HDR_GSO_TCPV6
	}
	if c.udp {
		ckOff, hdr, kind = udpChecksumOff, 8, unix.VIRTIO_NET_HDR_GSO_UDP_L4
	}
	// Replace the full checksum with the partial one the kernel leaves.
	var s, d []byte
	if c.v6 {
		s, d = pkt[l3+8:l3+24], pkt[l3+24:l3+40]
	} else {
		s, d = pkt[l3+12:l3+16], pkt[l3+16:l3+20]
	}
	proto := uint8(ipProtoTCP)
	if c.udp {
		proto = ipProtoUDP
	}
	binary.BigEndian.PutUint16(pkt[l4+ckOff:], csumFold(pseudoHeaderSum(s, d, proto, len(pkt)-l4)))
	h := VnetHdr(make([]byte, VnetHdrLen))
	if c.flags&flCWR != 0 {
		kind |= unix.VIRTIO_NET_HDR_GSO_ECN
	}
	h.Encode(&VnetFields{Flags: unix.VIRTIO_NET_HDR_F_NEEDS_CSUM, GSOType: kind, HdrLen: uint16(l4 + hdr),
		GSOSize: uint16(c.mss), CsumStart: uint16(l4), CsumOffset: uint16(ckOff)})
	return h, pkt
}

func TestSegment(t *testing.T) {
	cases := []gsoCase{
		{name: "tcp4", payload: 10000, mss: 1448, flags: flACK | flPSH},
		{name: "tcp4-fin-cwr", payload: 4000, mss: 1448, flags: flACK | flPSH | flFIN | flCWR},
		{name: "tcp4-exact", payload: 3 * 1448, mss: 1448, flags: flACK},
		{name: "tcp4-mtu-clamp", payload: 9000, mss: 8948, mtu: 1500, flags: flACK},
		{name: "tcp4-vlan", payload: 5000, mss: 1448, flags: flACK, vlan: true},
		{name: "tcp4-64k", payload: 65000, mss: 1448, flags: flACK},
		{name: "tcp6", v6: true, payload: 10000, mss: 1428, flags: flACK | flPSH},
		{name: "tcp6-jumbo", v6: true, payload: 60000, mss: 8928, flags: flACK | flFIN},
		{name: "udp4", udp: true, payload: 5000, mss: 1472},
		{name: "udp6", v6: true, udp: true, payload: 3000, mss: 1000},
		{name: "tcp4-tiny-mss", payload: 1000, mss: 88, flags: flACK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			payload := make([]byte, c.payload)
			for i := range payload {
				payload[i] = byte(i*7 + i>>8)
			}
			h, pkt := superFrame(t, c, payload)
			var s segmenter
			if err := s.start(h, pkt, c.mtu); err != nil {
				t.Fatal(err)
			}
			mss := c.mss
			if c.mtu > 0 {
				mss = min(mss, c.mtu-(s.pay-s.l3))
			}
			dst := make([]byte, 9600)
			var segs int
			for off := 0; off < len(payload); off += mss {
				if !s.pending() {
					t.Fatalf("segmenter done after %d segments", segs)
				}
				end := min(off+mss, len(payload))
				last := end == len(payload)
				fl := c.flags
				if !last {
					fl &^= flFIN | flPSH
				}
				if off > 0 {
					fl &^= flCWR
				}
				want := buildFrame(t, c, payload[off:end], uint32(off), uint16(segs), fl)
				n, err := s.emit(dst)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(dst[:n], want) {
					t.Fatalf("segment %d differs:\n got %x\nwant %x", segs, dst[:n], want)
				}
				if c.mtu > 0 && n-s.l3 > c.mtu {
					t.Fatalf("segment %d is %d bytes at L3, MTU %d", segs, n-s.l3, c.mtu)
				}
				segs++
			}
			if s.pending() {
				t.Fatalf("segments left after %d", segs)
			}
		})
	}
}

func TestCompleteChecksum(t *testing.T) {
	for _, c := range []gsoCase{{name: "tcp4", flags: flACK}, {name: "tcp6", v6: true, flags: flACK}, {name: "udp4", udp: true}, {name: "udp6-odd", udp: true, v6: true}} {
		t.Run(c.name, func(t *testing.T) {
			n := 301
			if c.name == "udp6-odd" {
				n = 3
			}
			payload := bytes.Repeat([]byte{0xA5, 0x3C, 0x01}, n)[:n]
			c.mss = 9000
			h, pkt := superFrame(t, c, payload)
			want := buildFrame(t, c, payload, 0, 0, c.flags)
			if bytes.Equal(pkt, want) {
				t.Fatal("partial checksum equals the full one; the test proves nothing")
			}
			if err := completeChecksum(h, pkt); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(pkt, want) {
				t.Fatalf("got %x\nwant %x", pkt, want)
			}
		})
	}
}

func TestSegmentRejects(t *testing.T) {
	c := gsoCase{payload: 3000, mss: 1448, flags: flACK}
	payload := make([]byte, c.payload)
	h, pkt := superFrame(t, c, payload)
	bad := func(mut func(h VnetHdr, p []byte) []byte) error {
		h2, p2 := VnetHdr(bytes.Clone(h)), bytes.Clone(pkt)
		p2 = mut(h2, p2)
		var s segmenter
		return s.start(h2, p2, 0)
	}
	for name, mut := range map[string]func(h VnetHdr, p []byte) []byte{
		"ufo":        func(h VnetHdr, p []byte) []byte { h[1] = unix.VIRTIO_NET_HDR_GSO_UDP; return p },
		"tcp6-on-v4": func(h VnetHdr, p []byte) []byte { h[1] = unix.VIRTIO_NET_HDR_GSO_TCPV6; return p },
		"short":      func(h VnetHdr, p []byte) []byte { return p[:30] },
		"ihl":        func(h VnetHdr, p []byte) []byte { p[14] = 0x44; return p },
		"proto":      func(h VnetHdr, p []byte) []byte { p[14+9] = 17; return p },
		"doff":       func(h VnetHdr, p []byte) []byte { p[34+12] = 0x40; return p },
		"zero-mss":   func(h VnetHdr, p []byte) []byte { binary.NativeEndian.PutUint16(h[4:], 0); return p },
		"arp":        func(h VnetHdr, p []byte) []byte { p[12], p[13] = 0x08, 0x06; return p },
	} {
		if err := bad(mut); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	var s segmenter
	if err := s.start(h, pkt, 0); err != nil {
		t.Fatalf("unmodified frame rejected: %v", err)
	}
	if _, err := s.emit(make([]byte, 100)); err != ErrFrameTooLarge {
		t.Fatalf("short buffer: %v", err)
	}
}

// FuzzSegment feeds arbitrary vnet headers and frames to the segmenter:
// it must never panic, every segment must fit the MTU and the segments'
// payloads must add up to the frame's.
func FuzzSegment(f *testing.F) {
	for _, c := range []gsoCase{{payload: 3000, mss: 1448, flags: flACK}, {v6: true, payload: 2000, mss: 500}, {udp: true, payload: 1000, mss: 300}, {vlan: true, payload: 100, mss: 40}} {
		h, p := superFrame(f, c, make([]byte, c.payload))
		f.Add([]byte(h), p, uint16(1500))
	}
	f.Fuzz(func(t *testing.T, hb, pkt []byte, mtu uint16) {
		if len(hb) < VnetHdrLen {
			return
		}
		h := VnetHdr(hb[:VnetHdrLen])
		if h.GSOKind() == unix.VIRTIO_NET_HDR_GSO_NONE {
			if h.NeedsCsum() {
				_ = completeChecksum(h, bytes.Clone(pkt))
			}
			return
		}
		var s segmenter
		if err := s.start(h, pkt, int(mtu)); err != nil {
			return
		}
		dst := make([]byte, 65536+64)
		total := 0
		for i := 0; s.pending(); i++ {
			if i > len(pkt)+1 {
				t.Fatal("segmenter does not terminate")
			}
			n, err := s.emit(dst)
			if err != nil {
				t.Fatal(err)
			}
			if mtu > 0 && n-s.l3 > int(mtu) {
				t.Fatalf("segment of %d bytes at L3 exceeds MTU %d", n-s.l3, mtu)
			}
			total += n - s.pay
		}
		if total != len(pkt)-s.pay {
			t.Fatalf("segments carry %d payload bytes, frame has %d", total, len(pkt)-s.pay)
		}
	})
}

func BenchmarkSegmentTCP4(b *testing.B) {
	c := gsoCase{payload: 65000, mss: 1448, flags: flACK}
	h, pkt := superFrame(b, c, make([]byte, c.payload))
	dst := make([]byte, 9600)
	var s segmenter
	b.ReportAllocs()
	b.SetBytes(int64(len(pkt)))
	for b.Loop() {
		if err := s.start(h, pkt, 1500); err != nil {
			b.Fatal(err)
		}
		for s.pending() {
			if _, err := s.emit(dst); err != nil {
				b.Fatal(err)
			}
		}
	}
}
