package nicd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

// TestCaptureNote: a RoCE record says its direction and, sent, its
// priority; an IB record its VL and SL, or a link packet's flow control,
// never a priority, which IB does not have.
func TestCaptureNote(t *testing.T) {
	link := make([]byte, wire.IBLinkSize)
	wire.IBLink(link).Encode(&wire.IBLinkFields{Op: wire.IBLinkOpNormal, FCTBS: 100, VL: 0, FCCL: 612})
	data := make([]byte, 64)
	wire.LRH(data).Encode(&wire.LRHFields{VL: 15, SL: 0, LNH: wire.LNHLocal, DLID: 1, SLID: 2, PktLen: 16})
	for _, c := range []struct {
		r    capRec
		ib   bool
		want string
	}{
		{capRec{tx: true, prio: 3, data: make([]byte, 60)}, false, "tx prio 3"},
		{capRec{data: make([]byte, 60)}, false, "rx"},
		// As emuswitch writes the same packet (wire.IBLinkNote).
		{capRec{tx: true, data: link}, true, "tx: flow control sent: VL 0 FCTBS 100 FCCL 612"},
		{capRec{data: link}, true, "rx: flow control received: VL 0 FCTBS 100 FCCL 612"},
		{capRec{data: data}, true, "rx VL 15 SL 0"},
		{capRec{tx: true, data: []byte{1, 2}}, true, "tx"},
	} {
		if got := captureNote(c.r, c.ib); got != c.want {
			t.Errorf("captureNote(%v, ib %v) = %q, want %q", c.r.data[:min(len(c.r.data), 8)], c.ib, got, c.want)
		}
	}
}

// TestCaptureStatsCountEveryDrop: frames a slow capture client lost are
// said in the comment of the next record that gets through, and all of
// them, those after the last record too, in the statistics block that
// ends the stream (isb_ifdrop), which equals the daemon's capture_drop.
func TestCaptureStatsCountEveryDrop(t *testing.T) {
	d, ctl := pairOfDaemons(t, testLab(t, ""))
	s := newCapSub(1, 1, false)
	f := &frame.Frame{Data: make([]byte, 60)}
	var first capRec
	if err := d[0].Do(func() {
		d[0].caps = append(d[0].caps, s)
		for range 3 { // one queued, two lost
			d[0].capture(f, false)
		}
		first, _ = s.q.Next()
		d[0].capture(f, false) // queued, after two lost
		for range 3 {          // lost: no record follows
			d[0].capture(f, false)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if first.dropped != 0 {
		t.Fatalf("first record: %d dropped before it", first.dropped)
	}
	// The client half-closed at once: the stream ends with what is
	// queued and the statistics.
	var buf bytes.Buffer
	if err := d[0].writeCapture(&buf, strings.NewReader(""), s); err != nil {
		t.Fatal(err)
	}
	recs, stats, err := capture.ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(recs))
	if n > 0 && recs[0].Comment != "rx; 2 frames before this one not captured (slow reader)" {
		t.Errorf("record comment %q", recs[0].Comment)
	}
	cnt, err := dial(t, ctl[0]).Counters()
	if err != nil {
		t.Fatal(err)
	}
	drops := int64(cnt.Ports[0].Counters["capture_drop"])
	st, ok := stats[0]
	if !ok || drops != 5 || st.Drop != drops || st.Recv != n+1+st.Drop {
		t.Errorf("statistics %+v (present %v), capture_drop %d: want isb_ifdrop 5 = capture_drop, isb_ifrecv %d", st, ok, drops, n+1+5)
	}
	d[0].Do(func() {
		if len(d[0].caps) != 0 {
			t.Errorf("%d capture subscribers left", len(d[0].caps))
		}
	})
}

// TestCapturePadLinks: an IB NIC's capture asked to pad link packets
// writes each as an ERF type 25 record of 64 bytes, the real 6 first and
// zeros after, as emuswitch's does; unasked, the record is the 6 bytes.
// Data packets are never padded.
func TestCapturePadLinks(t *testing.T) {
	d, _ := pairOfDaemons(t, specFrom(t, `name: b2b
fabric: ib
topology:
  nodes:
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:ib0", "h2:ib0"]
`))
	link := make([]byte, wire.IBLinkSize)
	wire.IBLink(link).Encode(&wire.IBLinkFields{Op: wire.IBLinkOpNormal, FCTBS: 100, VL: 0, FCCL: 612})
	data := make([]byte, 64)
	wire.LRH(data).Encode(&wire.LRHFields{VL: 0, LNH: wire.LNHLocal, DLID: 1, SLID: 2, PktLen: 16})
	for _, pad := range []bool{false, true} {
		s := newCapSub(2, 2, pad)
		s.q.Offer(capRec{at: time.Now(), data: link, tx: true}, true)
		s.q.Offer(capRec{at: time.Now(), data: data[:wire.LRHSize+4]}, false)
		var buf bytes.Buffer
		if err := d[0].writeCapture(&buf, strings.NewReader(""), s); err != nil {
			t.Fatal(err)
		}
		r, err := capture.Open(&buf)
		if err != nil {
			t.Fatal(err)
		}
		var rec capture.Record
		if err := r.Next(&rec); err != nil {
			t.Fatal(err)
		}
		want := link
		if pad {
			want = append(append([]byte(nil), link...), make([]byte, capture.IBLinkPadSize-wire.IBLinkSize)...)
		}
		if rec.ERF.Type != capture.ERFTypeInfiniBandLink || !bytes.Equal(rec.Data, want) || int(rec.ERF.WLen) != len(want) {
			t.Errorf("pad %v: link record type %d wlen %d %x, want type 25 %x", pad, rec.ERF.Type, rec.ERF.WLen, rec.Data, want)
		}
		if err := r.Next(&rec); err != nil {
			t.Fatal(err)
		}
		if rec.ERF.Type != capture.ERFTypeInfiniBand || len(rec.Data) != wire.LRHSize+4 {
			t.Errorf("pad %v: data record type %d, %d bytes, want type 21 of %d", pad, rec.ERF.Type, len(rec.Data), wire.LRHSize+4)
		}
	}
}

// A PFC frame arriving while a slow client's data queue is full still
// reaches the capture, through the control queue, in time order.
func TestCaptureKeepsPFCWhenBehind(t *testing.T) {
	d, _ := pairOfDaemons(t, testLab(t, ""))
	s := newCapSub(1, 4, false)
	data := &frame.Frame{Data: make([]byte, 60)}
	pfc := &frame.Frame{Data: make([]byte, wire.MACControlFrameSize)}
	wire.EncodePFC(pfc.Data, wire.MAC{2}, 1<<3, &[8]uint16{3: 0xFFFF})
	if err := d[0].Do(func() {
		d[0].caps = append(d[0].caps, s)
		d[0].capture(data, false) // queued
		d[0].capture(data, false) // lost: the data queue is full
		d[0].capture(pfc, false)  // the control queue
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := d[0].writeCapture(&buf, strings.NewReader(""), s); err != nil {
		t.Fatal(err)
	}
	recs, _, err := capture.ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var lens []int
	for _, rec := range recs {
		lens = append(lens, len(rec.Data))
	}
	if len(lens) != 2 || lens[1] != wire.MACControlFrameSize {
		t.Errorf("records of lengths %v, want the data frame then the PFC frame", lens)
	}
}
