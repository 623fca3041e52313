package capture_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

// The golden captures in ../testdata are copies of the project's frame
// oracle output (see wire/ib_golden_test.go): ib_native_erf.pcap (classic
// pcap, microseconds, link type 197, ERF types 21 and 25) and pfc_pause.pcap
// (link type 1).

type rec struct {
	capture.Record
	data, raw []byte
}

func readAll(t testing.TB, b []byte) (capture.Format, []rec) {
	t.Helper()
	r, err := capture.Open(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out []rec
	for {
		var x capture.Record
		err := r.Next(&x)
		if errors.Is(err, io.EOF) {
			return r.Format(), out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec{Record: x, data: append([]byte(nil), x.Data...), raw: append([]byte(nil), x.Raw...)})
	}
}

func golden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var t0 = time.Unix(1700000000, 123456789)

func TestERFTimestamp(t *testing.T) {
	for _, ns := range []int64{0, 1, 123456789, 500000000, 999999999} {
		ts := time.Unix(1700000000, ns)
		v := capture.ERFTimestamp(ts)
		if v>>32 != 1700000000 {
			t.Fatalf("seconds %d", v>>32)
		}
		if back := capture.ERFTime(v); !back.Equal(ts) {
			t.Fatalf("%v -> 0x%x -> %v", ts, v, back)
		}
	}
	// Half a second is 0x80000000 in the fraction.
	if v := capture.ERFTimestamp(time.Unix(5, 500000000)); v != 5<<32|0x80000000 {
		t.Fatalf("0.5 s = 0x%x", v)
	}
}

func TestPutERFHeaderGolden(t *testing.T) {
	b := make([]byte, capture.ERFHeaderSize)
	if err := capture.PutERFHeader(b, time.Unix(1700000000, 0), capture.ERFTypeInfiniBandLink, 1, 6); err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 0, 0, 0, 0x00, 0xf1, 0x53, 0x65, // 1700000000.0 little-endian 32.32
		25, 0x05, 0x00, 0x16, 0x00, 0x00, 0x00, 0x06} // type 25, varlen|iface 1, rlen 22, lctr 0, wlen 6
	if !bytes.Equal(b, want) {
		t.Fatalf("ERF header % x, want % x", b, want)
	}
	if err := capture.PutERFHeader(b, t0, 21, 0, 70000); err == nil {
		t.Fatal("oversized ERF record accepted")
	}
}

func TestParseERF(t *testing.T) {
	body := []byte{1, 2, 3, 4, 5, 6}
	r := make([]byte, 16+len(body))
	capture.PutERFHeader(r, t0, 25, 2, len(body))
	copy(r[16:], body)
	var h capture.ERFHeader
	got, err := capture.ParseERF(r, &h, 0)
	if err != nil || !bytes.Equal(got, body) || h.Type != 25 || h.Iface() != 2 || h.RLen != 22 || h.WLen != 6 || !h.Timestamp.Equal(t0) {
		t.Fatalf("ParseERF: %v % x %+v", err, got, h)
	}
	// Record padding beyond wlen is dropped.
	padded := append(append([]byte(nil), r...), 0, 0)
	binary.BigEndian.PutUint16(padded[10:], 24)
	if got, err := capture.ParseERF(padded, &h, 0); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("padded: %v % x", err, got)
	}
	// One extension header (type bit 7), skipped.
	ext := append(append(append([]byte(nil), r[:16]...), make([]byte, 8)...), body...)
	ext[8] |= 0x80
	binary.BigEndian.PutUint16(ext[10:], uint16(len(ext)))
	if got, err := capture.ParseERF(ext, &h, 0); err != nil || !bytes.Equal(got, body) || h.HdrLen != 24 || h.Type != 25 {
		t.Fatalf("extension: %v % x %+v", err, got, h)
	}
	for _, tc := range []struct {
		name   string
		b      []byte
		field  string
		reason wire.Reason
	}{
		{"short", r[:15], "wlen", wire.ReasonTruncated},
		{"ext short", ext[:20], "extension header", wire.ReasonTruncated},
		{"rlen below header", func() []byte { b := append([]byte(nil), r...); b[11] = 8; return b }(), "rlen", wire.ReasonInvalid},
		{"rlen below data", func() []byte { b := append([]byte(nil), r...); b[11] = 20; return b }(), "rlen", wire.ReasonInconsistent},
	} {
		_, err := capture.ParseERF(tc.b, &h, 100)
		var we *wire.Error
		if !errors.As(err, &we) || we.Header != "ERF" || we.Field != tc.field || we.Reason != tc.reason || we.Offset < 100 {
			t.Errorf("%s: %v, want ERF.%s %v", tc.name, err, tc.field, tc.reason)
		}
	}
}

func TestPcapWriterGoldenBytes(t *testing.T) {
	var out bytes.Buffer
	w, err := capture.NewPcapWriter(&out, capture.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(t0, []byte{0xde, 0xad}); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatal("unbuffered write")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, // nanosecond magic, v2.4
		0x00, 0x00, 0x04, 0x00, 1, 0, 0, 0, // snaplen 262144, Ethernet
		0x00, 0xf1, 0x53, 0x65, 0x15, 0xcd, 0x5b, 0x07, // 1700000000 s, 123456789 ns
		2, 0, 0, 0, 2, 0, 0, 0, 0xde, 0xad,
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("pcap\n% x\nwant\n% x", out.Bytes(), want)
	}
	if err := w.WritePacket(t0, nil); err == nil {
		t.Fatal("write after Close succeeded")
	}
	w2, _ := capture.NewPcapWriter(io.Discard, capture.LinkTypeEthernet)
	if err := w2.WriteERF(t0, 21, 0, []byte{1}); err == nil {
		t.Fatal("ERF record in an Ethernet file accepted")
	}
	if err := w2.WritePacket(t0, make([]byte, capture.DefaultSnapLen+1)); err == nil {
		t.Fatal("packet over snaplen accepted")
	}
}

// TestGoldenERFRewrite reads the oracle's ERF capture, writes every packet
// again with PcapWriter.WriteERF and NgWriter.WriteERF, and checks that the
// ERF records come out identical (timestamps to the nanosecond).
func TestGoldenERFRewrite(t *testing.T) {
	f, recs := readAll(t, golden(t, "ib_native_erf.pcap"))
	if f != capture.FormatPcap || len(recs) != 8 {
		t.Fatalf("format %v, %d records", f, len(recs))
	}
	var pc, ng bytes.Buffer
	pw, _ := capture.NewPcapWriter(&pc, capture.LinkTypeERF)
	nw, _ := capture.NewNgWriter(&ng, "test")
	id, err := nw.AddInterface(capture.Interface{LinkType: capture.LinkTypeERF, Name: "ib0"})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.LinkType != capture.LinkTypeERF || r.OrigLen != len(r.data) || int(r.ERF.WLen) != len(r.data) {
			t.Fatalf("record %d: %+v", i, r.Record)
		}
		want := uint8(capture.ERFTypeInfiniBand)
		if i >= 4 {
			want = capture.ERFTypeInfiniBandLink
		}
		if r.ERF.Type != want || r.ERF.Flags != capture.ERFFlagVarLen {
			t.Fatalf("record %d: ERF %+v", i, r.ERF)
		}
		if err := pw.WriteERF(r.ERF.Timestamp, r.ERF.Type, r.ERF.Iface(), r.data); err != nil {
			t.Fatal(err)
		}
		if err := nw.WriteERF(id, r.ERF.Timestamp, r.ERF.Type, r.ERF.Iface(), r.data, "golden"); err != nil {
			t.Fatal(err)
		}
	}
	pw.Close()
	nw.Close()
	for _, out := range []*bytes.Buffer{&pc, &ng} {
		_, again := readAll(t, out.Bytes())
		if len(again) != len(recs) {
			t.Fatalf("%d records back", len(again))
		}
		for i := range recs {
			a, b := recs[i].raw, again[i].raw
			if !bytes.Equal(a[8:], b[8:]) {
				t.Errorf("record %d: ERF record\n% x\nwant\n% x", i, b, a)
			}
			d := capture.ERFTime(binary.LittleEndian.Uint64(a)).Sub(capture.ERFTime(binary.LittleEndian.Uint64(b)))
			if d != 0 {
				t.Errorf("record %d: timestamp off by %v", i, d)
			}
		}
	}
}

func TestPcapngRoundTrip(t *testing.T) {
	var out bytes.Buffer
	w, err := capture.NewNgWriter(&out, "emufabric test")
	if err != nil {
		t.Fatal(err)
	}
	eth, _ := w.AddInterface(capture.Interface{LinkType: capture.LinkTypeEthernet, Name: "sw1:p1", Description: "RoCE port"})
	ib, _ := w.AddInterface(capture.Interface{LinkType: capture.LinkTypeERF, Name: "ib0"})
	if eth != 0 || ib != 1 {
		t.Fatalf("ids %d %d", eth, ib)
	}
	frame := bytes.Repeat([]byte{0x5a}, 61) // odd length: padding
	link := []byte{0x00, 0x64, 0x02, 0x64, 0xa8, 0x94}
	steps := []struct {
		id      int
		erf     bool
		ts      time.Time
		data    []byte
		comment string
	}{
		{eth, false, t0, frame, "ECN marked CE at queue depth 31 KB"},
		{ib, true, t0.Add(1), link, ""},
		{eth, false, t0.Add(time.Second + 7), frame[:60], "é comment, 3 bytes pad"},
		{ib, true, t0.Add(2 * time.Second), link, "a"},
	}
	for _, s := range steps {
		if s.erf {
			err = w.WriteERF(s.id, s.ts, capture.ERFTypeInfiniBandLink, 0, s.data, s.comment)
		} else {
			err = w.WritePacket(s.id, s.ts, s.data, s.comment)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WritePacket(5, t0, frame, ""); err == nil {
		t.Fatal("unknown interface accepted")
	}
	if err := w.WriteERF(eth, t0, 25, 0, link, ""); err == nil {
		t.Fatal("ERF record on an Ethernet interface accepted")
	}
	w.Close()
	if out.Len()%4 != 0 {
		t.Fatalf("file length %d not 4-aligned", out.Len())
	}
	f, recs := readAll(t, out.Bytes())
	if f != capture.FormatPcapNG || len(recs) != len(steps) {
		t.Fatalf("format %v, %d records", f, len(recs))
	}
	for i, s := range steps {
		r := recs[i]
		wantLT := capture.LinkTypeEthernet
		if s.erf {
			wantLT = capture.LinkTypeERF
		}
		if r.Interface != s.id || r.LinkType != wantLT || !r.Timestamp.Equal(s.ts) || !bytes.Equal(r.data, s.data) ||
			r.Comment != s.comment || r.OrigLen != len(s.data) {
			t.Errorf("record %d: %+v, want %+v", i, r.Record, s)
		}
		if s.erf && (r.ERF.Type != 25 || len(r.raw) != 16+len(s.data)) {
			t.Errorf("record %d: ERF %+v", i, r.ERF)
		}
	}
}

func TestPcapngGoldenBytes(t *testing.T) {
	var out bytes.Buffer
	w, _ := capture.NewNgWriter(&out, "")
	w.AddInterface(capture.Interface{LinkType: capture.LinkTypeEthernet, SnapLen: 1500})
	w.WritePacket(0, time.Unix(0, 0x0000000100000002), []byte{0xAB}, "hi")
	w.Close()
	le := func(v ...uint32) []byte {
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, x)
		}
		return b
	}
	var want []byte
	want = append(want, le(0x0A0D0D0A, 28, 0x1A2B3C4D, 0x00000001, 0xFFFFFFFF, 0xFFFFFFFF, 28)...) // SHB v1.0
	want = append(want, le(1, 32, 1, 1500, 0x00010009, 0x00000009, 0, 32)...)                      // IDB, if_tsresol 9
	want = append(want, le(6, 48, 0, 1, 2, 1, 1, 0x000000AB, 0x00020001, 0x00006968, 0, 48)...)    // EPB + opt_comment "hi"
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("pcapng\n% x\nwant\n% x", out.Bytes(), want)
	}
}

// beBlock builds a big-endian pcapng block.
func beBlock(typ uint32, body []byte) []byte {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	n := uint32(12 + len(body))
	b := binary.BigEndian.AppendUint32(nil, typ)
	b = binary.BigEndian.AppendUint32(b, n)
	b = append(b, body...)
	return binary.BigEndian.AppendUint32(b, n)
}

func bigEndianPcapng() []byte {
	var f []byte
	f = append(f, beBlock(0x0A0D0D0A, []byte{0x1A, 0x2B, 0x3C, 0x4D, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})...)
	// IDB: Ethernet, snaplen 0, no options (microsecond default).
	f = append(f, beBlock(1, []byte{0, 1, 0, 0, 0, 0, 0, 0})...)
	// EPB at 1700000000.000001 s in microseconds = 1700000000000001.
	ts := uint64(1700000000000001)
	epb := binary.BigEndian.AppendUint32(nil, 0)
	epb = binary.BigEndian.AppendUint32(epb, uint32(ts>>32))
	epb = binary.BigEndian.AppendUint32(epb, uint32(ts))
	epb = binary.BigEndian.AppendUint32(epb, 3)
	epb = binary.BigEndian.AppendUint32(epb, 10)
	epb = append(epb, 1, 2, 3, 0)
	f = append(f, beBlock(6, epb)...)
	f = append(f, beBlock(5, make([]byte, 8))...) // an ISB, skipped
	// Simple Packet Block.
	f = append(f, beBlock(3, []byte{0, 0, 0, 2, 9, 8, 0, 0})...)
	return f
}

func TestReadBigEndianPcapng(t *testing.T) {
	_, recs := readAll(t, bigEndianPcapng())
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if !r.Timestamp.Equal(time.Unix(1700000000, 1000)) || !bytes.Equal(r.data, []byte{1, 2, 3}) || r.OrigLen != 10 || r.LinkType != capture.LinkTypeEthernet {
		t.Fatalf("EPB %+v", r.Record)
	}
	if !bytes.Equal(recs[1].data, []byte{9, 8}) || recs[1].OrigLen != 2 {
		t.Fatalf("SPB %+v", recs[1].Record)
	}
}

// swapPcap rewrites a little-endian classic pcap as big-endian.
func swapPcap(b []byte) []byte {
	out := append([]byte(nil), b...)
	sw32 := func(o int) { binary.BigEndian.PutUint32(out[o:], binary.LittleEndian.Uint32(b[o:])) }
	sw16 := func(o int) { binary.BigEndian.PutUint16(out[o:], binary.LittleEndian.Uint16(b[o:])) }
	sw32(0)
	sw16(4)
	sw16(6)
	for _, o := range []int{8, 12, 16, 20} {
		sw32(o)
	}
	for o := 24; o+16 <= len(b); {
		for i := 0; i < 16; i += 4 {
			sw32(o + i)
		}
		o += 16 + int(binary.LittleEndian.Uint32(b[o+8:]))
	}
	return out
}

func TestReadPcapVariants(t *testing.T) {
	g := golden(t, "pfc_pause.pcap") // microsecond, little-endian
	_, a := readAll(t, g)
	_, b := readAll(t, swapPcap(g))
	if len(a) != 6 || len(b) != 6 {
		t.Fatalf("%d / %d records", len(a), len(b))
	}
	for i := range a {
		if !bytes.Equal(a[i].data, b[i].data) || !a[i].Timestamp.Equal(b[i].Timestamp) || a[i].LinkType != capture.LinkTypeEthernet || len(a[i].data) != 60 {
			t.Fatalf("record %d differs between byte orders", i)
		}
	}
	// Nanosecond variant, both byte orders.
	var out bytes.Buffer
	w, _ := capture.NewPcapWriter(&out, capture.LinkTypeEthernet)
	w.WritePacket(t0, a[0].data)
	w.Close()
	for _, f := range [][]byte{out.Bytes(), swapPcap(out.Bytes())} {
		_, r := readAll(t, f)
		if len(r) != 1 || !r[0].Timestamp.Equal(t0) || !bytes.Equal(r[0].data, a[0].data) {
			t.Fatalf("nanosecond pcap: %+v", r)
		}
	}
}

func TestReaderErrors(t *testing.T) {
	pc := golden(t, "pfc_pause.pcap")
	var ng bytes.Buffer
	w, _ := capture.NewNgWriter(&ng, "x")
	w.AddInterface(capture.Interface{LinkType: capture.LinkTypeEthernet})
	w.WritePacket(0, t0, []byte{1, 2, 3, 4, 5}, "c")
	w.Close()
	n := ng.Bytes()
	mut := func(b []byte, f func([]byte)) []byte { c := append([]byte(nil), b...); f(c); return c }
	shbLen := int(binary.LittleEndian.Uint32(n[4:]))
	idbLen := int(binary.LittleEndian.Uint32(n[shbLen+4:]))
	epb := shbLen + idbLen
	for _, tc := range []struct {
		name          string
		b             []byte
		header, field string
	}{
		{"empty", nil, "capture file", "magic"},
		{"bad magic", []byte("GIF89a.................."), "pcap file header", "magic"},
		{"pcap header short", pc[:20], "pcap file header", "linktype"},
		{"pcap version", mut(pc, func(b []byte) { b[4] = 3 }), "pcap file header", "version_major"},
		{"pcap linktype reserved", mut(pc, func(b []byte) { b[22] = 1 }), "pcap file header", "linktype"},
		{"pcap record short", pc[:30], "pcap record 1", "orig_len"},
		{"pcap data short", pc[:24+16+10], "pcap record 1", "data"},
		{"pcap usec", mut(pc, func(b []byte) { binary.LittleEndian.PutUint32(b[28:], 1000000) }), "pcap record 1", "ts_usec"},
		{"pcap incl > orig", mut(pc, func(b []byte) { binary.LittleEndian.PutUint32(b[36:], 10) }), "pcap record 1", "incl_len"},
		{"pcap incl huge", mut(pc, func(b []byte) { binary.LittleEndian.PutUint32(b[32:], 1<<30) }), "pcap record 1", "incl_len"},
		{"shb short", n[:10], "pcapng SHB (block 1)", "Byte-Order Magic"},
		{"shb len short", n[:6], "pcapng block (block 1)", "Block Total Length"},
		{"shb bom", mut(n, func(b []byte) { b[8] = 0 }), "pcapng SHB (block 1)", "Byte-Order Magic"},
		{"shb len", mut(n, func(b []byte) { b[4] = 13 }), "pcapng SHB (block 1)", "Block Total Length"},
		{"shb trailer", mut(n, func(b []byte) { b[shbLen-4]++ }), "pcapng block (block 1)", "trailing Block Total Length"},
		{"shb version", mut(n, func(b []byte) { b[12] = 2 }), "pcapng SHB (block 1)", "Major Version"},
		{"idb tsresol", mut(n, func(b []byte) { b[shbLen+idbLen-12] = 20 }), "pcapng IDB (block 2)", "if_tsresol"},
		{"idb option overrun", mut(n, func(b []byte) { b[shbLen+idbLen-14] = 0xF0 }), "pcapng IDB (block 2)", "Option Length"},
		{"epb iface", mut(n, func(b []byte) { b[epb+8] = 1 }), "pcapng EPB (block 3)", "Interface ID"},
		{"epb caplen", mut(n, func(b []byte) { b[epb+20] = 200 }), "pcapng EPB (block 3)", "Captured Packet Length"},
		{"epb caplen > orig", mut(n, func(b []byte) { b[epb+24] = 1 }), "pcapng EPB (block 3)", "Captured Packet Length"},
		{"epb body short", n[:len(n)-8], "pcapng block (block 3)", "Block Body"},
		{"block before shb", append([]byte{0x0A, 0x0D, 0x0D, 0x0A}, make([]byte, 4)...), "pcapng SHB (block 1)", "Byte-Order Magic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := readErr(tc.b)
			var we *wire.Error
			if !errors.As(err, &we) || we.Header != tc.header || we.Field != tc.field {
				t.Fatalf("err = %v, want %s.%s", err, tc.header, tc.field)
			}
		})
	}
	// An ERF record that is broken is reported by the ERF header's field.
	var e bytes.Buffer
	pw, _ := capture.NewPcapWriter(&e, capture.LinkTypeERF)
	pw.WritePacket(t0, []byte{1, 2, 3})
	pw.Close()
	var we *wire.Error
	if err := readErr(e.Bytes()); !errors.As(err, &we) || we.Header != "ERF" {
		t.Fatalf("short ERF record: %v", err)
	}
}

// readErr reads a whole file and returns the first error other than EOF.
func readErr(b []byte) error {
	r, err := capture.Open(bytes.NewReader(b))
	if err != nil {
		return err
	}
	for {
		var x capture.Record
		if err := r.Next(&x); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
