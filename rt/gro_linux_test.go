package rt

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// The merge is checked against two independent references: the merged
// frame and its vnet header must equal what the kernel itself hands a TAP
// for the same payload (superFrame, built with gopacket), and cutting it
// again must give back every segment byte for byte (the segmenter, which
// TestSegment checks against gopacket).

// groSegments builds the segments of c with gopacket, as a TSO sender
// cuts them: PSH and FIN on the last, CWR on the first only.
func groSegments(t testing.TB, c gsoCase, payload []byte) [][]byte {
	t.Helper()
	var segs [][]byte
	for off := 0; off < len(payload); off += c.mss {
		end := min(off+c.mss, len(payload))
		fl := c.flags
		if end != len(payload) {
			fl &^= flFIN | flPSH
		}
		if off > 0 {
			fl &^= flCWR
		}
		segs = append(segs, buildFrame(t, c, payload[off:end], uint32(off), uint16(len(segs)), fl))
	}
	return segs
}

func groPayload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*13 + i>>7)
	}
	return p
}

// coalesceAll merges segs in order into trains the way TAP.Queue does and
// returns each train as written (vnet header first).
func coalesceAll(t testing.TB, segs [][]byte) [][]byte {
	t.Helper()
	c := newCoalescer()
	var out [][]byte
	flush := func() { out = append(out, bytes.Clone(c.finish())) }
	for _, b := range segs {
		s, ok := parseGROSeg(b)
		if c.pending() {
			if ok && c.add(b, s) {
				if c.closed {
					flush()
				}
				continue
			}
			flush()
		}
		if !ok {
			out = append(out, append(make([]byte, VnetHdrLen), b...))
			continue
		}
		c.start(b, s)
		if c.closed {
			flush()
		}
	}
	if c.pending() {
		flush()
	}
	return out
}

// resegment cuts a written train back into frames as the kernel would.
func resegment(t testing.TB, msg []byte) [][]byte {
	t.Helper()
	h, pkt := VnetHdr(msg[:VnetHdrLen]), msg[VnetHdrLen:]
	if h.GSOType() == 0 {
		if h.Flags() != 0 {
			t.Fatalf("single frame with vnet flags %#x", h.Flags())
		}
		return [][]byte{bytes.Clone(pkt)}
	}
	var s segmenter
	if err := s.start(h, bytes.Clone(pkt), 0); err != nil {
		t.Fatalf("merged train rejected by the segmenter: %v (%v)", err, h)
	}
	var out [][]byte
	dst := make([]byte, 9600)
	for s.pending() {
		n, err := s.emit(dst)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.Clone(dst[:n]))
	}
	return out
}

func TestCoalesceRoundTrip(t *testing.T) {
	cases := []gsoCase{
		{name: "tcp4", payload: 10000, mss: 1448, flags: flACK | flPSH},
		{name: "tcp4-fin-cwr", payload: 4000, mss: 1448, flags: flACK | flPSH | flFIN | flCWR},
		{name: "tcp4-exact", payload: 3 * 1448, mss: 1448, flags: flACK},
		{name: "tcp4-vlan", payload: 5000, mss: 1448, flags: flACK, vlan: true},
		{name: "tcp4-64k", payload: 45 * 1448, mss: 1448, flags: flACK},
		{name: "tcp6", v6: true, payload: 10000, mss: 1428, flags: flACK | flPSH},
		{name: "tcp6-jumbo", v6: true, payload: 60000, mss: 8928, flags: flACK | flFIN},
		{name: "udp4", udp: true, payload: 5000, mss: 1472},
		{name: "udp4-64B", udp: true, payload: 22 * 64, mss: 22},
		{name: "udp6", v6: true, udp: true, payload: 3000, mss: 1000},
		{name: "tcp4-two", payload: 2000, mss: 1448, flags: flACK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			payload := groPayload(c.payload)
			segs := groSegments(t, c, payload)
			trains := coalesceAll(t, segs)
			if len(trains) != 1 {
				t.Fatalf("%d segments made %d trains, want 1", len(segs), len(trains))
			}
			wantH, wantPkt := superFrame(t, c, payload)
			if got := VnetHdr(trains[0][:VnetHdrLen]); !bytes.Equal(got, wantH) {
				t.Errorf("vnet header %v, want %v", got, wantH)
			}
			if got := trains[0][VnetHdrLen:]; !bytes.Equal(got, wantPkt) {
				t.Errorf("merged frame differs from the kernel's:\n got %x\nwant %x", got, wantPkt)
			}
			back := resegment(t, trains[0])
			if len(back) != len(segs) {
				t.Fatalf("resegmented into %d, want %d", len(back), len(segs))
			}
			for i := range segs {
				if !bytes.Equal(back[i], segs[i]) {
					t.Fatalf("segment %d differs after the round trip:\n got %x\nwant %x", i, back[i], segs[i])
				}
			}
		})
	}
}

// TestCoalesceBreaks: a segment that the kernel's segmentation could not
// regenerate from the train is never merged. Each case changes segment 2
// of 5 and says how many trains (each written with one write(2)) result.
func TestCoalesceBreaks(t *testing.T) {
	c := gsoCase{payload: 5 * 1000, mss: 1000, flags: flACK}
	ipOff, tcpOff := 14, 34
	fixIP := func(b []byte) {
		b[ipOff+10], b[ipOff+11] = 0, 0
		binary.BigEndian.PutUint16(b[ipOff+10:], ipv4HeaderChecksum(b[ipOff:ipOff+20]))
	}
	fixTCP := func(b []byte) {
		l4 := b[tcpOff:]
		l4[16], l4[17] = 0, 0
		binary.BigEndian.PutUint16(l4[16:], ^csumFold(csumAdd(pseudoHeaderSum(b[ipOff+12:ipOff+16], b[ipOff+16:ipOff+20], ipProtoTCP, len(l4)), l4)))
	}
	for _, tc := range []struct {
		name   string
		mut    func(b []byte) []byte
		trains int
	}{
		{"unchanged", func(b []byte) []byte { return b }, 1},
		{"seq gap", func(b []byte) []byte { b[tcpOff+7]++; fixTCP(b); return b }, 3},
		{"ack", func(b []byte) []byte { b[tcpOff+11]++; fixTCP(b); return b }, 3},
		{"window", func(b []byte) []byte { b[tcpOff+15]++; fixTCP(b); return b }, 3},
		{"timestamp", func(b []byte) []byte { b[tcpOff+27]++; fixTCP(b); return b }, 3},
		{"port", func(b []byte) []byte { b[tcpOff+1]++; fixTCP(b); return b }, 3},
		{"ip id gap", func(b []byte) []byte { b[ipOff+5] += 9; fixIP(b); return b }, 3},
		{"ecn ce", func(b []byte) []byte { b[ipOff+1] |= 3; fixIP(b); return b }, 3},
		{"ttl", func(b []byte) []byte { b[ipOff+8]--; fixIP(b); return b }, 3},
		{"dst mac", func(b []byte) []byte { b[5]++; return b }, 3},
		{"psh", func(b []byte) []byte { b[tcpOff+13] |= flPSH; fixTCP(b); return b }, 2},
		{"fin", func(b []byte) []byte { b[tcpOff+13] |= flFIN; fixTCP(b); return b }, 2},
		{"cwr", func(b []byte) []byte { b[tcpOff+13] |= flCWR; fixTCP(b); return b }, 2},
		{"syn", func(b []byte) []byte { b[tcpOff+13] |= tcpFlagSYN; fixTCP(b); return b }, 3},
		{"urg", func(b []byte) []byte { b[tcpOff+13] |= tcpFlagURG; fixTCP(b); return b }, 3},
		{"short", func(b []byte) []byte {
			b = b[:len(b)-10]
			binary.BigEndian.PutUint16(b[ipOff+2:], uint16(len(b)-ipOff))
			fixIP(b)
			fixTCP(b)
			return b
		}, 2},
		{"longer", func(b []byte) []byte {
			b = append(b, 1, 2, 3)
			binary.BigEndian.PutUint16(b[ipOff+2:], uint16(len(b)-ipOff))
			fixIP(b)
			fixTCP(b)
			return b
		}, 3},
		{"pure ack", func(b []byte) []byte {
			b = b[:tcpOff+32]
			binary.BigEndian.PutUint16(b[ipOff+2:], uint16(len(b)-ipOff))
			fixIP(b)
			fixTCP(b)
			return b
		}, 3},
		{"ethernet padding", func(b []byte) []byte { return append(b, 0, 0) }, 3},
		{"corrupt payload", func(b []byte) []byte { b[len(b)-100] ^= 0xff; return b }, 3},
		{"corrupt ip header", func(b []byte) []byte { b[ipOff+8] ^= 0x10; return b }, 3},
		{"corrupt tcp checksum", func(b []byte) []byte { b[tcpOff+16] ^= 1; return b }, 3},
		{"fragment", func(b []byte) []byte { b[ipOff+6] |= 0x20; fixIP(b); return b }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := groPayload(c.payload)
			segs := groSegments(t, c, payload)
			segs[2] = tc.mut(segs[2])
			trains := coalesceAll(t, segs)
			if len(trains) != tc.trains {
				t.Fatalf("%d trains, want %d", len(trains), tc.trains)
			}
			// Whatever was merged or not, the frames are the segments.
			var back [][]byte
			for _, tr := range trains {
				back = append(back, resegment(t, tr)...)
			}
			if len(back) != len(segs) {
				t.Fatalf("%d frames out, %d in", len(back), len(segs))
			}
			for i := range segs {
				if !bytes.Equal(back[i], segs[i]) {
					t.Fatalf("frame %d differs:\n got %x\nwant %x", i, back[i], segs[i])
				}
			}
		})
	}
}

// TestCoalesceLimits: a train stops at groMaxSegments and at 64 KiB of IP
// packet; UDP without a checksum is never merged.
func TestCoalesceLimits(t *testing.T) {
	c := gsoCase{udp: true, payload: 100 * 22, mss: 22}
	if n := len(coalesceAll(t, groSegments(t, c, groPayload(c.payload)))); n != 2 {
		t.Errorf("100 segments: %d trains, want 2 (at most %d each)", n, groMaxSegments)
	}
	c = gsoCase{payload: 50 * 1448, mss: 1448, flags: flACK}
	trains := coalesceAll(t, groSegments(t, c, groPayload(c.payload)))
	if len(trains) != 2 {
		t.Fatalf("50 x 1448: %d trains, want 2", len(trains))
	}
	for _, tr := range trains {
		if l := len(tr) - VnetHdrLen - 14; l > groMaxIP {
			t.Errorf("train of %d IP bytes", l)
		}
	}
	c = gsoCase{udp: true, payload: 3 * 100, mss: 100}
	segs := groSegments(t, c, groPayload(c.payload))
	for _, b := range segs {
		b[34+6], b[34+7] = 0, 0
	}
	if n := len(coalesceAll(t, segs)); n != 3 {
		t.Errorf("UDP without checksum: %d trains, want 3", n)
	}
}

// FuzzParseGROSeg: the candidate parser never panics, and whatever it
// accepts it accepts with offsets inside the frame.
func FuzzParseGROSeg(f *testing.F) {
	for _, c := range []gsoCase{{payload: 300, mss: 300, flags: flACK}, {v6: true, payload: 200, mss: 200, flags: flACK}, {udp: true, payload: 100, mss: 100}, {vlan: true, payload: 100, mss: 100, flags: flACK}} {
		f.Add(buildFrame(f, c, groPayload(c.payload), 0, 0, c.flags))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := parseGROSeg(b)
		if !ok {
			return
		}
		if !(s.l3 < s.l4 && s.l4 < s.pay && s.pay < len(b)) {
			t.Fatalf("offsets %d %d %d in %d bytes", s.l3, s.l4, s.pay, len(b))
		}
		c := newCoalescer()
		c.start(b, s)
		c.add(b, s) // the same segment again: never contiguous for TCP
		_ = resegment(t, c.finish())
	})
}

func BenchmarkCoalesceTCP4(b *testing.B) {
	c := gsoCase{payload: 45 * 1448, mss: 1448, flags: flACK}
	segs := groSegments(b, c, groPayload(c.payload))
	co := newCoalescer()
	b.ReportAllocs()
	b.SetBytes(int64(c.payload))
	for b.Loop() {
		for i, seg := range segs {
			s, ok := parseGROSeg(seg)
			if !ok {
				b.Fatal("not a candidate")
			}
			if i == 0 {
				co.start(seg, s)
			} else if !co.add(seg, s) {
				b.Fatal("not merged")
			}
		}
		co.finish()
	}
}
