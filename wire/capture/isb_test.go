package capture_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/wire/capture"
)

// isbFile is a pcapng with two interfaces, a packet on each and an
// Interface Statistics Block for each at the end.
func isbFile(t *testing.T) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := capture.NewNgWriter(&out, "emufabric test")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := w.AddInterface(capture.Interface{LinkType: capture.LinkTypeEthernet, Name: "sw1:p1"})
	b, _ := w.AddInterface(capture.Interface{LinkType: capture.LinkTypeEthernet, Name: "sw1:p2"})
	frame := bytes.Repeat([]byte{0x5a}, 60)
	w.WritePacket(a, t0, frame, "rx")
	w.WritePacket(b, t0.Add(1), frame, "tx")
	if err := w.WriteInterfaceStats(a, capture.InterfaceStats{Time: t0.Add(time.Second), Start: t0, Recv: 7, Drop: 6, Delivered: 1}); err != nil {
		t.Fatal(err)
	}
	st := capture.UnknownStats(t0.Add(2 * time.Second))
	st.Drop = 0
	if err := w.WriteInterfaceStats(b, st); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteInterfaceStats(2, st); err == nil {
		t.Fatal("ISB for an interface not added accepted")
	}
	w.Close()
	return out.Bytes()
}

// TestPcapngInterfaceStats writes ISBs and reads them back: the reader
// passes them over as packets go and keeps each interface's last.
func TestPcapngInterfaceStats(t *testing.T) {
	data := isbFile(t)
	r, err := capture.Open(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var rec capture.Record
	for r.Next(&rec) == nil {
		n++
	}
	if n != 2 {
		t.Fatalf("%d packets, want 2", n)
	}
	got := r.InterfaceStats()
	want := map[int]capture.InterfaceStats{
		0: {Time: t0.Add(time.Second), Start: t0, Recv: 7, Drop: 6, Delivered: 1},
		1: {Time: t0.Add(2 * time.Second), Recv: -1, Drop: 0, Delivered: -1},
	}
	if len(got) != len(want) {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
	for id, w := range want {
		g := got[id]
		if !g.Time.Equal(w.Time) || !g.Start.Equal(w.Start) || g.Recv != w.Recv || g.Drop != w.Drop || g.Delivered != w.Delivered {
			t.Errorf("interface %d: %+v, want %+v", id, g, w)
		}
	}
}

// TestCapinfosInterfaceStats: Wireshark's capinfos reads the file whole
// and sees a statistics block per interface (4.0 shows how many, not
// their counts), and tshark reads the packets around them.
func TestCapinfosInterfaceStats(t *testing.T) {
	capinfos, err := exec.LookPath("capinfos")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("capinfos not found and CI=true")
		}
		t.Skip("capinfos not installed")
	}
	file := filepath.Join(t.TempDir(), "isb.pcapng")
	if err := os.WriteFile(file, isbFile(t), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(capinfos, file).CombinedOutput()
	if err != nil {
		t.Fatalf("capinfos: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{"Number of packets:   2", "Number of interfaces in file: 2"} {
		if !strings.Contains(s, want) {
			t.Errorf("capinfos output lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "Number of stat entries = 1"); n != 2 {
		t.Errorf("capinfos sees %d interfaces with one stat entry, want 2:\n%s", n, s)
	}
	tshark := needTshark(t)
	rows := tsharkFields(t, tshark, isbFile(t), "isb.pcapng", "frame.interface_id", "frame.comment", "_ws.malformed")
	if len(rows) != 2 || rows[0]["frame.comment"] != "rx" || rows[1]["frame.comment"] != "tx" || rows[0]["_ws.malformed"] != "" {
		t.Errorf("tshark: %v", rows)
	}
}

// ReadAll returns every record, each with its own bytes, and the
// statistics blocks at the end.
func TestReadAll(t *testing.T) {
	recs, st, err := capture.ReadAll(bytes.NewReader(isbFile(t)))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Comment != "rx" || recs[1].Comment != "tx" || len(st) != 2 {
		t.Fatalf("records %d (%v), statistics %v", len(recs), recs, st)
	}
	if &recs[0].Data[0] == &recs[1].Data[0] {
		t.Error("records share their Data")
	}
	if _, _, err := capture.ReadAll(bytes.NewReader([]byte{1, 2})); err == nil {
		t.Error("a two-byte stream read without an error")
	}
}
