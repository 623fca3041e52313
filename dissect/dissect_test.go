package dissect_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/dissect"
	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
	"github.com/emufabric/emufabric/zoo"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// zooPcapNG is the whole zoo in one pcapng: an Ethernet and an ERF
// interface, a comment per frame.
func zooPcapNG(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := zoo.WritePcapNG(&b, zoo.All()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGoldenZoo decodes the zoo and compares with testdata/zoo.jsonl.
// Regenerate with: go test ./dissect -run TestGoldenZoo -update
func TestGoldenZoo(t *testing.T) {
	var out bytes.Buffer
	if err := dissect.Decode(bytes.NewReader(zooPcapNG(t)), &out); err != nil {
		t.Fatalf("decoding the zoo: %v", err)
	}
	golden := filepath.Join("testdata", "zoo.jsonl")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	got := strings.Split(out.String(), "\n")
	wl := strings.Split(string(want), "\n")
	for i := 0; i < len(got) || i < len(wl); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
		}
	}
}

// decodeLines decodes capture bytes into one map per frame.
func decodeLines(t *testing.T, capt []byte) ([]map[string]any, error) {
	t.Helper()
	var out bytes.Buffer
	err := dissect.Decode(bytes.NewReader(capt), &out)
	var objs []map[string]any
	dec := json.NewDecoder(&out)
	dec.UseNumber()
	for dec.More() {
		var m map[string]any
		if jerr := dec.Decode(&m); jerr != nil {
			t.Fatalf("decode output is not JSON lines: %v", jerr)
		}
		objs = append(objs, m)
	}
	return objs, err
}

// lookup follows a dotted path ("bth.psn") through decoded JSON.
func lookup(m map[string]any, path string) (any, bool) {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = o[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// TestFormatsAgree: the pcap and ERF files decode to the same headers as the
// pcapng that holds both (only frame numbers, interface and comment differ).
func TestFormatsAgree(t *testing.T) {
	ng, err := decodeLines(t, zooPcapNG(t))
	if err != nil {
		t.Fatal(err)
	}
	var eth, ib bytes.Buffer
	if err := zoo.WritePcap(&eth, zoo.Ethernet()); err != nil {
		t.Fatal(err)
	}
	if err := zoo.WriteERF(&ib, zoo.IB()); err != nil {
		t.Fatal(err)
	}
	pe, err := decodeLines(t, eth.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	pi, err := decodeLines(t, ib.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	flat := append(pe, pi...)
	if len(flat) != len(ng) {
		t.Fatalf("pcap+ERF give %d frames, pcapng %d", len(flat), len(ng))
	}
	for i := range ng {
		for _, k := range []string{"frame", "interface", "comment"} {
			delete(ng[i], k)
			delete(flat[i], k)
		}
		a, _ := json.Marshal(ng[i])
		b, _ := json.Marshal(flat[i])
		if !bytes.Equal(a, b) {
			t.Errorf("frame %d differs:\npcapng %s\npcap   %s", i+1, a, b)
		}
	}
}

// TestZooRoundTrip: every field the zoo intended is what dissect reports.
func TestZooRoundTrip(t *testing.T) {
	objs, err := decodeLines(t, zooPcapNG(t))
	if err != nil {
		t.Fatal(err)
	}
	entries := zoo.All()
	if len(objs) != len(entries) {
		t.Fatalf("%d frames decoded, zoo has %d", len(objs), len(entries))
	}
	for i, e := range entries {
		for path, want := range expectations(e) {
			got, ok := lookup(objs[i], path)
			if !ok {
				t.Errorf("%s: %s missing", e.Name, path)
				continue
			}
			if g, w := jsonText(got), jsonText(want); g != w {
				t.Errorf("%s: %s = %s, want %s", e.Name, path, g, w)
			}
		}
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// expectations lists, per dotted path of the decode output, the value the
// zoo built the frame with.
func expectations(e zoo.Entry) map[string]any {
	w := e.Want
	m := map[string]any{}
	if w.Ethernet != nil {
		m["eth.dst"], m["eth.src"], m["eth.ethertype"] = w.Ethernet.Dst.String(), w.Ethernet.Src.String(), w.Ethernet.EtherType
		if w.Ethernet.Tagged {
			m["vlan.pcp"], m["vlan.vid"], m["vlan.dei"] = w.Ethernet.PCP, w.Ethernet.VID, b2i(w.Ethernet.DEI)
		}
	}
	if w.IPVersion != 0 {
		ip := "ipv4"
		if w.IPVersion == 6 {
			ip = "ipv6"
		}
		m[ip+".dscp"], m[ip+".ecn"] = w.DSCP, w.ECN
		m[ip+".src"], m[ip+".dst"] = w.Src.String(), w.Dst.String()
		if w.IPVersion == 6 {
			m["ipv6.flow_label"], m["ipv6.hop_limit"] = w.FlowLabel, w.TTL
		} else {
			m["ipv4.ttl"] = w.TTL
		}
		m["udp.sport"], m["udp.dport"], m["udp.checksum"] = w.SrcPort, 4791, 0
		m["icrc_ok"] = true
	}
	if b := w.BTH; b != nil {
		m["bth.opcode"], m["bth.se"], m["bth.m"], m["bth.padcnt"] = uint8(b.OpCode), b2i(b.SE), b2i(b.MigReq), b.PadCount
		m["bth.tver"], m["bth.pkey"], m["bth.fecn"], m["bth.becn"] = b.TVer, b.PKey, b2i(b.FECN), b2i(b.BECN)
		m["bth.dqpn"], m["bth.ackreq"], m["bth.psn"] = b.DestQP, b2i(b.AckReq), b.PSN
		m["payload_len"] = w.PayloadLen
		info := b.OpCode.Info()
		x := w.Ext
		if info.Has(0) { // DETH
			m["deth.qkey"], m["deth.srcqp"] = x.DETH.QKey, x.DETH.SrcQP
		}
		if info.Has(1) { // RETH
			m["reth.va"], m["reth.rkey"], m["reth.dmalen"] = x.RETH.VA, x.RETH.RKey, x.RETH.DMALen
		}
		if info.Has(2) { // AtomicETH
			m["atomiceth.va"], m["atomiceth.rkey"] = x.AtomicETH.VA, x.AtomicETH.RKey
			m["atomiceth.swap_add"], m["atomiceth.compare"] = x.AtomicETH.SwapAdd, x.AtomicETH.Compare
		}
		if info.Has(3) { // AETH
			m["aeth.syndrome"], m["aeth.msn"] = uint8(x.AETH.Syndrome), x.AETH.MSN
		}
		if info.Has(4) {
			m["atomicacketh.orig"] = x.AtomicAckETH
		}
		if info.Has(5) {
			m["immdt.data"] = x.ImmDt
		}
		if info.Has(6) {
			m["ieth.rkey"] = x.IETH
		}
	}
	if mc := w.MACControl; mc != nil {
		if mc.Opcode == wire.MACControlOpPFC {
			m["pfc.enable"], m["pfc.time"] = mc.Enable, mc.Time[:]
		} else {
			m["pause.quanta"] = mc.Time[0]
		}
	}
	if l := w.LRH; l != nil {
		m["lrh.vl"], m["lrh.sl"], m["lrh.lnh"], m["lrh.dlid"], m["lrh.slid"], m["lrh.pktlen"] = l.VL, l.SL, l.LNH, l.DLID, l.SLID, l.PktLen
		m["icrc_ok"], m["vcrc_ok"] = true, true
	}
	if g := w.GRH; g != nil {
		m["grh.paylen"], m["grh.nxthdr"], m["grh.hoplmt"], m["grh.flow_label"] = g.PayLen, g.NxtHdr, g.HopLmt, g.FlowLabel
	}
	if l := w.IBLink; l != nil {
		m["link.op"], m["link.fctbs"], m["link.vl"], m["link.fccl"], m["lpcrc_ok"] = l.Op, l.FCTBS, l.VL, l.FCCL, true
	}
	return m
}

// frameOf returns a copy of the zoo entry called name.
func frameOf(t *testing.T, name string) []byte {
	t.Helper()
	for _, e := range zoo.All() {
		if e.Name == name {
			return append([]byte(nil), e.Data...)
		}
	}
	t.Fatalf("no zoo entry %q", name)
	return nil
}

func pcapOf(t *testing.T, link capture.LinkType, erfType uint8, frames ...[]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := capture.NewPcapWriter(&b, link)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if link == capture.LinkTypeERF {
			err = w.WriteERF(zoo.Timestamp(i), erfType, 0, f)
		} else {
			err = w.WritePacket(zoo.Timestamp(i), f)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const (
	sendOnly4  = "RoCEv2/IPv4 RC_SEND_ONLY"
	sendFirst4 = "RoCEv2/IPv4 RC_SEND_FIRST"
	ack4       = "RoCEv2/IPv4 RC_ACKNOWLEDGE"
	cnp4       = "RoCEv2/IPv4 CNP (DSCP 48, PCP 6, BECN)"
	ibLocal    = "IB local (LRH) RC_SEND_ONLY"
	ibGlobal   = "IB global (LRH+GRH) RC_SEND_ONLY"
	ibLinkInit = "IB link flow control init VL0"
	// Offsets in an untagged RoCEv2/IPv4 frame.
	ipv4At = 14
	udpAt  = ipv4At + 20
	bthAt  = udpAt + 8
)

// TestBadFrames: a frame that cannot be decoded is named by frame number,
// header and field; decoding goes on; the error is the first bad frame's.
func TestBadFrames(t *testing.T) {
	cases := []struct {
		name  string
		link  capture.LinkType
		erf   uint8
		frame func(t *testing.T) []byte
		want  string // prefix of the error after "frame 2: "
	}{
		{"cut inside the IP datagram", capture.LinkTypeEthernet, 0, func(t *testing.T) []byte {
			return frameOf(t, sendOnly4)[:50]
		}, "IPv4.TotalLength: truncated"},
		{"cut inside the Ethernet header", capture.LinkTypeEthernet, 0, func(t *testing.T) []byte {
			return frameOf(t, sendOnly4)[:9]
		}, "Ethernet.EtherType: truncated"},
		{"PadCnt on a FIRST packet", capture.LinkTypeEthernet, 0, func(t *testing.T) []byte {
			f := frameOf(t, sendFirst4)
			f[bthAt+1] |= 2 << 4
			return f
		}, "BTH.PadCnt: inconsistent"},
		{"PadCnt larger than what follows", capture.LinkTypeEthernet, 0, func(t *testing.T) []byte {
			f := frameOf(t, ack4)
			f[bthAt+1] |= 3 << 4
			return f
		}, "BTH.PadCnt: inconsistent"},
		{"TVer 1", capture.LinkTypeEthernet, 0, func(t *testing.T) []byte {
			f := frameOf(t, sendOnly4)
			f[bthAt+1] |= 1
			return f
		}, "BTH.TVer: invalid"},
		{"reserved opcode 0x15", capture.LinkTypeEthernet, 0, func(t *testing.T) []byte {
			f := frameOf(t, ack4)
			f[bthAt] = 0x15
			return f
		}, "BTH.OpCode: invalid"},
		{"reserved AETH syndrome type", capture.LinkTypeEthernet, 0, func(t *testing.T) []byte {
			f := frameOf(t, ack4)
			f[bthAt+12] = 0x40
			return f
		}, "AETH.Syndrome: invalid"},
		{"CNP without BECN", capture.LinkTypeEthernet, 0, func(t *testing.T) []byte {
			f := frameOf(t, cnp4)
			f[bthAt+4+4] &^= 0x40 // tagged frame: headers 4 bytes later
			return f
		}, "BTH.BECN: inconsistent"},
		{"UDP length disagrees with IP", capture.LinkTypeEthernet, 0, func(t *testing.T) []byte {
			f := frameOf(t, sendOnly4)
			f[udpAt+5]--
			return f
		}, "UDP.Length: inconsistent"},
		{"IB PktLen too long", capture.LinkTypeERF, capture.ERFTypeInfiniBand, func(t *testing.T) []byte {
			f := frameOf(t, ibLocal)
			f[5]++
			return f
		}, "LRH.PktLen: truncated"},
		{"IB GRH PayLen off by a word", capture.LinkTypeERF, capture.ERFTypeInfiniBand, func(t *testing.T) []byte {
			f := frameOf(t, ibGlobal)
			f[8+5] -= 4
			return f
		}, "GRH.PayLen: inconsistent"},
		{"IB link packet of 7 bytes", capture.LinkTypeERF, capture.ERFTypeInfiniBandLink, func(t *testing.T) []byte {
			return append(frameOf(t, ibLinkInit), 0)
		}, "IBLink: inconsistent"},
		{"IB link packet with a reserved Op", capture.LinkTypeERF, capture.ERFTypeInfiniBandLink, func(t *testing.T) []byte {
			f := frameOf(t, ibLinkInit)
			f[0] |= 0x70
			return f
		}, "IBLink.Op: invalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			good := frameOf(t, sendOnly4)
			if c.link == capture.LinkTypeERF {
				good = frameOf(t, ibLocal)
				if c.erf == capture.ERFTypeInfiniBandLink {
					good = frameOf(t, ibLinkInit)
				}
			}
			// good, bad, good: the bad frame is frame 2 and the third still decodes.
			objs, err := decodeLines(t, pcapOf(t, c.link, c.erf, good, c.frame(t), good))
			var fe *dissect.FrameError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T), want a *dissect.FrameError", err, err)
			}
			var we *wire.Error
			if fe.Frame != 2 || !errors.As(err, &we) {
				t.Fatalf("error %v: want frame 2 wrapping a *wire.Error", err)
			}
			if want := "frame 2: " + c.want; !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("error %q, want prefix %q", err, want)
			}
			if len(objs) != 3 {
				t.Fatalf("%d JSON lines, want 3", len(objs))
			}
			if _, ok := objs[1]["error"]; !ok {
				t.Errorf("frame 2 has no error member: %v", objs[1])
			}
			for _, i := range []int{0, 2} {
				if e, ok := objs[i]["error"]; ok {
					t.Errorf("frame %d: unexpected error %v", i+1, e)
				}
			}
		})
	}
}

// TestBadCRCs: a CRC or checksum that does not verify is a verdict, not an
// error.
func TestBadCRCs(t *testing.T) {
	cases := []struct {
		name    string
		link    capture.LinkType
		erf     uint8
		frame   func(t *testing.T) []byte
		verdict string
	}{
		{"ICRC, payload flipped", capture.LinkTypeEthernet, 0, func(t *testing.T) []byte {
			f := frameOf(t, sendOnly4)
			f[bthAt+20] ^= 1
			return f
		}, "icrc_ok"},
		{"IPv4 header checksum", capture.LinkTypeEthernet, 0, func(t *testing.T) []byte {
			f := frameOf(t, sendOnly4)
			f[ipv4At+10] ^= 0x10
			return f
		}, "ipv4.checksum_ok"},
		{"IB ICRC", capture.LinkTypeERF, capture.ERFTypeInfiniBand, func(t *testing.T) []byte {
			f := frameOf(t, ibGlobal)
			f[len(f)-4] ^= 0x80 // last ICRC byte; the VCRC is then wrong too
			return f
		}, "icrc_ok"},
		{"IB VCRC", capture.LinkTypeERF, capture.ERFTypeInfiniBand, func(t *testing.T) []byte {
			f := frameOf(t, ibLocal)
			f[len(f)-1] ^= 0x01
			return f
		}, "vcrc_ok"},
		{"IB LPCRC", capture.LinkTypeERF, capture.ERFTypeInfiniBandLink, func(t *testing.T) []byte {
			f := frameOf(t, ibLinkInit)
			f[4] ^= 0x01
			return f
		}, "lpcrc_ok"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs, err := decodeLines(t, pcapOf(t, c.link, c.erf, c.frame(t)))
			if err != nil {
				t.Fatalf("a bad CRC must not fail the decode: %v", err)
			}
			if v, ok := lookup(objs[0], c.verdict); !ok || v != false {
				t.Errorf("%s = %v (present %v), want false", c.verdict, v, ok)
			}
		})
	}
}

// TestDamagedFile: a capture that is not one, or is cut mid-record, is an
// error too, and never a panic.
func TestDamagedFile(t *testing.T) {
	if err := dissect.Decode(strings.NewReader("not a capture"), &bytes.Buffer{}); err == nil {
		t.Error("decoding text: no error")
	}
	p := pcapOf(t, capture.LinkTypeEthernet, 0, frameOf(t, sendOnly4))
	_, err := decodeLines(t, p[:len(p)-10])
	var fe *dissect.FrameError
	if !errors.As(err, &fe) || fe.Frame != 1 {
		t.Errorf("a pcap cut inside record 1: error %v, want frame 1", err)
	}
}

// TestLinkTypes: raw IB (link type 247) decodes like ERF type 21; other ERF
// record types and other link types are named as unsupported.
func TestLinkTypes(t *testing.T) {
	objs, err := decodeLines(t, pcapOf(t, capture.LinkTypeInfiniBand, 0, frameOf(t, ibGlobal)))
	if err != nil {
		t.Fatal(err)
	}
	if objs[0]["linktype"] != "infiniband" {
		t.Errorf("linktype %v, want infiniband", objs[0]["linktype"])
	}
	if v, _ := lookup(objs[0], "icrc_ok"); v != true {
		t.Errorf("icrc_ok %v over link type 247", v)
	}
	for _, c := range []struct {
		capt []byte
		want string
	}{
		{pcapOf(t, capture.LinkTypeERF, 2, frameOf(t, sendOnly4)), "frame 1: ERF.Type: unsupported"},
		{pcapOf(t, capture.LinkTypeUser0, 0, frameOf(t, sendOnly4)), "frame 1: capture.LinkType: unsupported"},
	} {
		if _, err := decodeLines(t, c.capt); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("error %v, want %q...", err, c.want)
		}
	}
}
