package capture_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

// fuzzRead reads every record of b; any error must be a *wire.Error (or
// EOF), never a panic, and every record must respect its own lengths.
func fuzzRead(t *testing.T, b []byte) {
	r, err := capture.Open(bytes.NewReader(b))
	if err != nil {
		var we *wire.Error
		if !errors.As(err, &we) {
			t.Fatalf("Open error %T %v is not a *wire.Error", err, err)
		}
		return
	}
	for range 10000 {
		var rec capture.Record
		err := r.Next(&rec)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			var we *wire.Error
			if !errors.As(err, &we) {
				t.Fatalf("Next error %T %v is not a *wire.Error", err, err)
			}
			return
		}
		if len(rec.Raw) > capture.MaxRecordSize || len(rec.Data) > len(rec.Raw) {
			t.Fatalf("record lengths: data %d raw %d", len(rec.Data), len(rec.Raw))
		}
	}
}

func pcapSeed(link capture.LinkType, erf bool) []byte {
	var out bytes.Buffer
	w, _ := capture.NewPcapWriter(&out, link)
	if erf {
		w.WriteERF(t0, capture.ERFTypeInfiniBandLink, 1, []byte{0x00, 0x64, 0x02, 0x64, 0xa8, 0x94})
	} else {
		w.WritePacket(t0, make([]byte, 60))
	}
	w.Close()
	return out.Bytes()
}

func pcapngSeed() []byte {
	var out bytes.Buffer
	w, _ := capture.NewNgWriter(&out, "seed")
	w.AddInterface(capture.Interface{LinkType: capture.LinkTypeEthernet, Name: "p1", Description: "d"})
	w.AddInterface(capture.Interface{LinkType: capture.LinkTypeERF})
	w.WritePacket(0, t0, make([]byte, 61), "comment")
	w.WriteERF(1, t0, capture.ERFTypeInfiniBand, 0, make([]byte, 26), "")
	w.Close()
	return out.Bytes()
}

// FuzzReadPcap fuzzes the classic pcap reader (both magics, both byte
// orders, ERF records inside).
func FuzzReadPcap(f *testing.F) {
	f.Add(pcapSeed(capture.LinkTypeEthernet, false))
	f.Add(pcapSeed(capture.LinkTypeERF, true))
	f.Add(swapPcap(pcapSeed(capture.LinkTypeERF, true)))
	f.Add(golden(f, "ib_native_erf.pcap"))
	f.Add(golden(f, "pfc_pause.pcap"))
	f.Fuzz(fuzzRead)
}

// FuzzReadPcapng fuzzes the pcapng reader (SHB byte orders, IDB options,
// EPB/SPB/PB, comments, ERF inside).
func FuzzReadPcapng(f *testing.F) {
	f.Add(pcapngSeed())
	f.Add(bigEndianPcapng())
	f.Add(pcapngSeed()[:40])
	f.Fuzz(fuzzRead)
}

// FuzzParseERF fuzzes the ERF record decoder and checks what it returns
// lies inside the record and within wlen.
func FuzzParseERF(f *testing.F) {
	b := make([]byte, 22)
	capture.PutERFHeader(b, t0, 25, 0, 6)
	f.Add(b)
	ext := append(append([]byte(nil), b[:16]...), make([]byte, 14)...)
	ext[8] |= 0x80
	f.Add(ext)
	f.Add(b[:10])
	f.Fuzz(func(t *testing.T, rec []byte) {
		var h capture.ERFHeader
		body, err := capture.ParseERF(rec, &h, 0)
		if err != nil {
			return
		}
		if len(body) > int(h.WLen) || h.HdrLen+len(body) > len(rec) || h.HdrLen < capture.ERFHeaderSize {
			t.Fatalf("body %d bytes, wlen %d, hdr %d, rec %d", len(body), h.WLen, h.HdrLen, len(rec))
		}
	})
}

func TestWritersNoAlloc(t *testing.T) {
	pkt := make([]byte, 1024)
	pw, _ := capture.NewPcapWriter(io.Discard, capture.LinkTypeERF)
	nw, _ := capture.NewNgWriter(io.Discard, "x")
	nw.AddInterface(capture.Interface{LinkType: capture.LinkTypeEthernet})
	nw.AddInterface(capture.Interface{LinkType: capture.LinkTypeERF})
	ts := t0
	n := testing.AllocsPerRun(500, func() {
		ts = ts.Add(time.Microsecond)
		if pw.WritePacket(ts, pkt) != nil || pw.WriteERF(ts, 21, 0, pkt[:26]) != nil ||
			nw.WritePacket(0, ts, pkt, "PFC XOFF sent, queue 3 above xoff") != nil ||
			nw.WriteERF(1, ts, 25, 0, pkt[:6], "") != nil {
			t.Fatal("write failed")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per packet", n)
	}
}

// BenchmarkNgWriter measures pcapng EPBs of 1 KiB with a comment.
func BenchmarkNgWriter(b *testing.B) {
	pkt := make([]byte, 1024)
	w, _ := capture.NewNgWriter(io.Discard, "bench")
	w.AddInterface(capture.Interface{LinkType: capture.LinkTypeEthernet})
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	ts := t0
	for b.Loop() {
		ts = ts.Add(time.Microsecond)
		if err := w.WritePacket(0, ts, pkt, "ECN CE marked"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNgWriterERF measures IB data packets (ERF type 21) of 4 KiB.
func BenchmarkNgWriterERF(b *testing.B) {
	pkt := make([]byte, 4096+8+12+4+2)
	w, _ := capture.NewNgWriter(io.Discard, "bench")
	w.AddInterface(capture.Interface{LinkType: capture.LinkTypeERF})
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	ts := t0
	for b.Loop() {
		ts = ts.Add(time.Microsecond)
		if err := w.WriteERF(0, ts, capture.ERFTypeInfiniBand, 0, pkt, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPcapWriter measures classic pcap records of 1 KiB.
func BenchmarkPcapWriter(b *testing.B) {
	pkt := make([]byte, 1024)
	w, _ := capture.NewPcapWriter(io.Discard, capture.LinkTypeEthernet)
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	ts := t0
	for b.Loop() {
		ts = ts.Add(time.Microsecond)
		if err := w.WritePacket(ts, pkt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReader measures reading a pcapng file of 1000 packets.
func BenchmarkReader(b *testing.B) {
	var out bytes.Buffer
	w, _ := capture.NewNgWriter(&out, "bench")
	w.AddInterface(capture.Interface{LinkType: capture.LinkTypeEthernet})
	pkt := make([]byte, 1024)
	for range 1000 {
		w.WritePacket(0, t0, pkt, "")
	}
	w.Close()
	b.SetBytes(int64(out.Len()))
	b.ReportAllocs()
	for b.Loop() {
		r, err := capture.Open(bytes.NewReader(out.Bytes()))
		if err != nil {
			b.Fatal(err)
		}
		var rec capture.Record
		for r.Next(&rec) == nil {
		}
	}
}
