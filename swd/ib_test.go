package swd

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/rt"
	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

const ibTestLab = "testdata/ib-two-hosts.yaml"

// ibBlocks is the lab's vl_buffer in credits (4 KiB / 64).
const ibBlocks = 64

// ibPeer is the test playing an HCA on one port: a reader goroutine
// hands every packet the switch sends to the test, which picks the ones
// it waits for; the others (the periodic flow-control packets) are kept
// in seen.
type ibPeer struct {
	t    *testing.T
	l    *rt.Seqpacket
	ch   chan []byte
	seen [][]byte
}

func newIBPeer(t *testing.T, path string) *ibPeer {
	l, err := rt.DialSeqpacket(path)
	if err != nil {
		t.Fatal(err)
	}
	p := &ibPeer{t: t, l: l, ch: make(chan []byte, 4096)}
	t.Cleanup(func() { l.Close() })
	go func() {
		bufs := [][]byte{make([]byte, 9600)}
		sizes := []int{0}
		for {
			n, err := l.Read(bufs, sizes, 0)
			if err != nil {
				close(p.ch)
				return
			}
			if n == 1 {
				p.ch <- append([]byte(nil), bufs[0][:sizes[0]]...)
			}
		}
	}()
	return p
}

// next returns the first packet for which want is true, waiting up to
// timeout; nil if none came.
func (p *ibPeer) next(timeout time.Duration, want func(b []byte) bool) []byte {
	p.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case b, ok := <-p.ch:
			if !ok {
				p.t.Fatal("the switch closed the link")
			}
			p.seen = append(p.seen, b)
			if want(b) {
				return b
			}
		case <-deadline:
			return nil
		}
	}
}

// fc waits for a flow-control packet of vl.
func (p *ibPeer) fc(vl uint8, timeout time.Duration) *wire.IBLinkFields {
	p.t.Helper()
	b := p.next(timeout, func(b []byte) bool { return isIBLink(b) && wire.IBLink(b).VL() == vl })
	if b == nil {
		return nil
	}
	if err := wire.IBLink(b).Validate(0); err != nil {
		p.t.Fatalf("flow-control packet from the switch: %v", err)
	}
	var f wire.IBLinkFields
	wire.IBLink(b).Fields(&f)
	return &f
}

// grant sends a flow-control packet: fctbs blocks sent so far on vl, and
// the credit limit fccl.
func (p *ibPeer) grant(vl uint8, fctbs, fccl uint16) {
	b := make([]byte, wire.IBLinkSize)
	wire.IBLink(b).Encode(&wire.IBLinkFields{Op: wire.IBLinkOpNormal, FCTBS: fctbs, VL: vl, FCCL: fccl})
	p.send(b)
}

func (p *ibPeer) send(b []byte) {
	p.t.Helper()
	if n, err := p.l.Write([][]byte{b}, 0); err != nil || n != 1 {
		p.t.Fatalf("write: %v", err)
	}
}

func isData(b []byte) bool { return !isIBLink(b) }

// ibData is an RC SEND ONLY of payload bytes from slid to dlid, sent on
// VL vl with service level sl.
func ibData(t *testing.T, vl, sl uint8, slid, dlid uint16, payload int) []byte {
	t.Helper()
	pl := make([]byte, payload)
	for i := range pl {
		pl[i] = byte(i)
	}
	f := bth.IBFields{
		LRH:     wire.LRHFields{VL: vl, SL: sl, DLID: dlid, SLID: slid},
		BTH:     bth.BTHFields{OpCode: bth.RCSendOnly, PKey: 0xFFFF, DestQP: 0x11, AckReq: true, PSN: 7},
		Payload: pl,
	}
	b := make([]byte, f.PacketLen())
	if _, err := bth.EncodeIB(b, &f); err != nil {
		t.Fatal(err)
	}
	return b
}

type ibTestDaemon struct {
	*testDaemon
	spec *lab.Spec
	peer [2]*ibPeer
	log  *syncBuffer
}

// syncBuffer is a log the test reads while the daemon writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startIBDaemon runs the IB lab's switch with both ports listening on
// seqpacket sockets and the test as both HCAs, connected.
func startIBDaemon(t *testing.T) *ibTestDaemon {
	t.Helper()
	spec, err := lab.Load(ibTestLab)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := Options{Lab: ibTestLab, Node: "sw1", Control: filepath.Join(dir, "ctl.sock"), Metrics: "127.0.0.1:0", NoFlood: []string{"p2"}}
	for _, p := range []string{"p1", "p2"} {
		b, err := ParsePortFlag(p + "=seqpacket-listen:" + filepath.Join(dir, p+".sock"))
		if err != nil {
			t.Fatal(err)
		}
		o.Ports = append(o.Ports, b)
	}
	logBuf := &syncBuffer{}
	d, err := New(o, logBuf)
	if err != nil {
		t.Fatal(err)
	}
	d.Start()
	td := &ibTestDaemon{testDaemon: &testDaemon{d: d, ctl: o.Control}, spec: spec, log: logBuf}
	t.Cleanup(func() {
		d.Close()
		if t.Failed() {
			t.Logf("daemon log:\n%s", logBuf.String())
		}
	})
	for i, b := range o.Ports {
		td.peer[i] = newIBPeer(t, b.Path)
	}
	waitFor(t, "ports up", func() bool {
		var st StatusResponse
		td.call(t, Request{Op: "status"}, &st)
		return len(st.Ports) == 2 && st.Ports[0].Up && st.Ports[1].Up
	})
	return td
}

// TestIBForwardAndCredits plays two HCAs on an IB switch: the switch
// advertises its receive buffer per VL with link packets as each peer
// connects; a packet from h1 to h2's LID is forwarded on the VL its SL
// maps to, with the VCRC recomputed and the ICRC untouched, but only
// once h2 has granted credit on that VL: until then the switch holds it
// (a credit stall, no drop). Once the packet has left, the switch gives
// h1 its blocks back.
func TestIBForwardAndCredits(t *testing.T) {
	td := startIBDaemon(t)
	h1, h2 := td.peer[0], td.peer[1]
	lid1, lid2 := td.spec.Node("h1").LID, td.spec.Node("h2").LID

	// The switch's flow-control init on both ports and both data VLs.
	for i, p := range td.peer {
		for vl := range uint8(2) {
			f := p.fc(vl, 5*time.Second)
			if f == nil {
				t.Fatalf("port p%d: no flow-control packet for VL %d", i+1, vl)
			}
			if f.FCTBS != 0 || f.FCCL != ibBlocks || f.Op != wire.IBLinkOpNormal {
				t.Errorf("port p%d VL %d: first flow-control packet %+v, want FCTBS 0 FCCL %d", i+1, vl, f, ibBlocks)
			}
		}
	}
	for vl := range uint8(2) {
		h1.grant(vl, 0, ibBlocks)
	}

	// SL 1 on VL 0 from h1: leaves on VL 1 towards h2, which has granted
	// nothing yet.
	pkt := ibData(t, 0, 1, lid1, lid2, 100)
	blocks := wire.CreditBlocks(len(pkt))
	h1.send(pkt)
	waitFor(t, "credit stall on p2 VL 1", func() bool { return td.counters(t, "p2")["vl1_credit_stalls"] == 1 })
	if b := h2.next(200*time.Millisecond, isData); b != nil {
		t.Fatalf("the switch sent %d bytes on p2 before h2 granted credit", len(b))
	}
	c2 := td.counters(t, "p2")
	if c2["vl1_tx_packets"] != 0 || c2["vl1_tx_credits"] != 0 {
		t.Errorf("p2 before credit: vl1_tx_packets %d vl1_tx_credits %d", c2["vl1_tx_packets"], c2["vl1_tx_credits"])
	}

	h2.grant(1, 0, ibBlocks)
	got := h2.next(5*time.Second, isData)
	if got == nil {
		t.Fatal("the packet did not arrive after h2 granted credit")
	}
	if err := wire.CheckVCRC(got, 0); err != nil {
		t.Errorf("forwarded packet: %v", err)
	}
	lrh := wire.LRH(got)
	if lrh.VL() != 1 || lrh.SL() != 1 || lrh.DLID() != lid2 || lrh.SLID() != lid1 {
		t.Errorf("forwarded LRH: VL %d SL %d DLID %d SLID %d, want VL 1 SL 1 DLID %d SLID %d", lrh.VL(), lrh.SL(), lrh.DLID(), lrh.SLID(), lid2, lid1)
	}
	// Only the VL nibble and the VCRC differ; the ICRC (which masks the
	// VL) still holds.
	want := append([]byte(nil), pkt...)
	want[0] = want[0]&0x0F | 1<<4
	wire.PutVCRC(want)
	if !bytes.Equal(got, want) {
		t.Errorf("forwarded packet\n got %x\nwant %x", got, want)
	}
	var ip bth.IBPacket
	if err := ip.Decode(got, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
		t.Errorf("forwarded packet does not decode: %v", err)
	}

	// h1's blocks come back: a flow-control packet for VL 0 whose limit
	// moved on by the packet's blocks.
	// Periodic ones with the old limit (one a millisecond) wait before it.
	wantFCCL := wire.AddBlocks(ibBlocks, blocks)
	if h1.next(5*time.Second, func(b []byte) bool {
		return isIBLink(b) && wire.IBLink(b).VL() == 0 && wire.IBLink(b).FCCL() == wantFCCL
	}) == nil {
		t.Errorf("no flow-control packet to h1 with FCCL %d after the packet left", wantFCCL)
	}

	c1, c2 := td.counters(t, "p1"), td.counters(t, "p2")
	if c1["vl0_rx_packets"] != 1 || c2["vl1_tx_packets"] != 1 || c2["vl1_fc_rx"] == 0 || c1["vl0_fc_tx"] == 0 {
		t.Errorf("counters: p1 vl0_rx_packets %d, p2 vl1_tx_packets %d vl1_fc_rx %d, p1 vl0_fc_tx %d",
			c1["vl0_rx_packets"], c2["vl1_tx_packets"], c2["vl1_fc_rx"], c1["vl0_fc_tx"])
	}
	if c2["vl1_tx_credits"] != uint64(ibBlocks-blocks) {
		t.Errorf("p2 vl1_tx_credits %d, want %d", c2["vl1_tx_credits"], ibBlocks-blocks)
	}
	for _, c := range []map[string]uint64{c1, c2} {
		for name, v := range c {
			if strings.HasPrefix(name, "drop_") && v != 0 || name == "not_connected_drop" && v != 0 {
				t.Errorf("%s = %d: nothing may be dropped", name, v)
			}
			if strings.HasPrefix(name, "flood_") {
				t.Errorf("an IB port reports %s", name)
			}
		}
	}
	if !strings.Contains(td.log.String(), "--no-flood [p2] has no effect") {
		t.Errorf("--no-flood on an IB switch was not reported in the log")
	}

	// Metrics: per VL, no PFC.
	resp, err := httpGet("http://" + td.d.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{
		`emu_vl_transmitted_packets_total{lab="swdib",node="sw1",port="p2",vl="1"} 1`,
		`emu_vl_received_packets_total{lab="swdib",node="sw1",port="p1",vl="0"} 1`,
	} {
		if !strings.Contains(resp.body, l+"\n") {
			t.Errorf("metrics: missing %s", l)
		}
	}
	checkMetricNames(t, resp.body)
	for _, bad := range []string{"emu_pfc_", "priority=", "emu_flood"} {
		if strings.Contains(resp.body, bad) {
			t.Errorf("IB metrics contain %s", bad)
		}
	}
	// emu_port_*_packets_total count the wire's packets, link packets
	// included, and IBA's PortCounters of the control socket exclude
	// them: the difference is the per-VL flow-control families, as the
	// metrics' help and docs/daemons.md say. The link packets keep
	// flowing (one a millisecond), so the counters are read with the
	// metrics in one snapshot of the loop: the metrics' own.
	sample := func(name, port string) uint64 {
		var sum uint64
		re := regexp.MustCompile(`(?m)^` + name + `\{lab="swdib",node="sw1",port="` + port + `"(,vl="\d")?\} (\d+)$`)
		for _, m := range re.FindAllStringSubmatch(resp.body, -1) {
			v, _ := strconv.ParseUint(m[2], 10, 64)
			sum += v
		}
		return sum
	}
	for _, port := range []string{"p1", "p2"} {
		for _, dir := range []string{"transmitted", "received"} {
			wire := sample("emu_port_"+dir+"_packets_total", port)
			fc := sample("emu_vl_flow_control_packets_"+dir+"_total", port)
			data := sample("emu_vl_"+dir+"_packets_total", port)
			if fc == 0 || wire != fc+data {
				t.Errorf("%s: emu_port_%s_packets_total %d, want the flow-control packets (%d) and the data packets (%d)", port, dir, wire, fc, data)
			}
		}
	}
	if !strings.Contains(resp.body, "# HELP emu_port_transmitted_packets_total Packets transmitted by the switch port, link (flow-control) packets included") {
		t.Errorf("the help of emu_port_transmitted_packets_total does not say it counts link packets")
	}
}

// TestIBCapture: an IB switch's capture is pcapng with ERF interfaces,
// data packets as ERF type 21 and link packets as type 25, the ERF
// interface telling the direction (0 received, 1 sent).
func TestIBCapture(t *testing.T) {
	td := startIBDaemon(t)
	h1, h2 := td.peer[0], td.peer[1]
	lid1, lid2 := td.spec.Node("h1").LID, td.spec.Node("h2").LID
	h2.grant(1, 0, ibBlocks)
	waitFor(t, "h2's credit", func() bool { return td.counters(t, "p2")["vl1_tx_credits"] == ibBlocks })

	c, br := openCapture(t, td.ctl, `{"op":"capture","ports":["p1","p2"]}`, `{"ok":true`)
	pkt := ibData(t, 0, 1, lid1, lid2, 64)
	h1.grant(0, 0, ibBlocks)
	h1.send(pkt)
	if h2.next(5*time.Second, isData) == nil {
		t.Fatal("not forwarded")
	}

	r, err := capture.Open(br)
	if err != nil {
		t.Fatal(err)
	}
	var rec capture.Record
	var sawLinkRx, sawData, sawFwd, sawLinkTx bool
	deadline := time.Now().Add(5 * time.Second)
	c.(*net.UnixConn).SetReadDeadline(deadline)
	for !(sawLinkRx && sawData && sawFwd && sawLinkTx) {
		if err := r.Next(&rec); err != nil {
			t.Fatalf("record: %v (link rx %v, data rx %v, data tx %v, link tx %v)", err, sawLinkRx, sawData, sawFwd, sawLinkTx)
		}
		if rec.LinkType != capture.LinkTypeERF {
			t.Fatalf("record of link type %v", rec.LinkType)
		}
		dir := rec.ERF.Iface()
		if (dir == 0) != strings.HasPrefix(rec.Comment, "rx") {
			t.Errorf("ERF interface %d with comment %q", dir, rec.Comment)
		}
		switch rec.ERF.Type {
		case capture.ERFTypeInfiniBandLink:
			if err := wire.IBLink(rec.Data).Validate(0); err != nil {
				t.Errorf("link record: %v", err)
			}
			switch {
			case rec.Interface == 0 && dir == 0 && strings.HasPrefix(rec.Comment, "rx: flow control received: VL 0 FCTBS 0 FCCL 64"):
				sawLinkRx = true
			case dir == 1 && strings.HasPrefix(rec.Comment, "tx: flow control sent: VL "):
				sawLinkTx = true
			}
		case capture.ERFTypeInfiniBand:
			var ip bth.IBPacket
			if err := ip.Decode(rec.Data, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
				t.Errorf("data record %q: %v", rec.Comment, err)
			}
			switch {
			case rec.Interface == 0 && dir == 0 && bytes.Equal(rec.Data, pkt) && rec.Comment == "rx":
				sawData = true
			case rec.Interface == 1 && dir == 1 && ip.LRH.VL() == 1 && rec.Comment == "tx":
				sawFwd = true
			default:
				t.Errorf("unexpected data record on interface %d: %q", rec.Interface, rec.Comment)
			}
		default:
			t.Errorf("ERF type %d", rec.ERF.Type)
		}
	}
}

// TestIBPadLinks: with "pad_links" a link packet's ERF record holds 64
// bytes, the real 6 first.
func TestIBPadLinks(t *testing.T) {
	td := startIBDaemon(t)
	c, br := openCapture(t, td.ctl, `{"op":"capture","ports":["p1"],"pad_links":true}`, `{"ok":true`)
	td.peer[0].grant(0, 0, 9)
	r, err := capture.Open(br)
	if err != nil {
		t.Fatal(err)
	}
	c.(*net.UnixConn).SetReadDeadline(time.Now().Add(5 * time.Second))
	var rec capture.Record
	for {
		if err := r.Next(&rec); err != nil {
			t.Fatal(err)
		}
		if rec.ERF.Type != capture.ERFTypeInfiniBandLink || rec.ERF.Iface() != 0 {
			continue // the switch's own periodic ones
		}
		if len(rec.Data) != 64 || wire.IBLink(rec.Data[:wire.IBLinkSize]).FCCL() != 9 || !bytes.Equal(rec.Data[wire.IBLinkSize:], make([]byte, 64-wire.IBLinkSize)) {
			t.Errorf("padded link record %x", rec.Data)
		}
		return
	}
}

// TestIBRefusesTAP: a TAP speaks Ethernet; an IB switch refuses it and
// names the port.
func TestIBRefusesTAP(t *testing.T) {
	dir := t.TempDir()
	ctl := filepath.Join(dir, "c.sock")
	b, err := ParsePortFlag("p2=tap:ib0@emu-x-h2")
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{Lab: ibTestLab, Node: "sw1", Control: ctl, Ports: []PortBind{b}}, io.Discard)
	if err == nil {
		d.Close()
		t.Fatal("an IB switch started with a TAP port")
	}
	for _, want := range []string{"--port p2=tap:ib0@emu-x-h2", "fabric ib", "TAP is an Ethernet device"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(ctl); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused start left %s", ctl)
	}
}

// TestIBSubnetManagerLab: with ib.sm the switch gets an agent; its ports
// report their IBA state (Down until a peer connects, then Initialize:
// the SM activates them) and its forwarding table starts empty, so a data
// packet is not forwarded.
func TestIBSubnetManagerLab(t *testing.T) {
	src, err := os.ReadFile(ibTestLab)
	if err != nil {
		t.Fatal(err)
	}
	labFile := filepath.Join(t.TempDir(), "sm.yaml")
	os.WriteFile(labFile, bytes.Replace(src, []byte("ib:\n"), []byte("ib:\n  sm: h1\n"), 1), 0o600)
	dir := t.TempDir()
	o := Options{Lab: labFile, Node: "sw1", Control: filepath.Join(dir, "ctl.sock")}
	b, _ := ParsePortFlag("p1=seqpacket-listen:" + filepath.Join(dir, "p1.sock"))
	o.Ports = append(o.Ports, b)
	d, err := New(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	d.Start()
	defer d.Close()
	td := &testDaemon{d: d, ctl: o.Control}
	var st StatusResponse
	td.call(t, Request{Op: "status"}, &st)
	if len(st.Ports) != 2 || st.Ports[0].IBState != "Down" {
		t.Fatalf("status before a peer: %+v", st.Ports)
	}
	h1 := newIBPeer(t, b.Path)
	waitFor(t, "p1 up", func() bool {
		td.call(t, Request{Op: "status"}, &st)
		return st.Ports[0].Up
	})
	h1.grant(0, 0, ibBlocks)
	h1.send(ibData(t, 0, 0, 2, 3, 32))
	waitFor(t, "the packet dropped", func() bool { return td.counters(t, "p1")["drop_no_route"] == 1 })
	c := td.counters(t, "p1")
	if _, ok := c["sma_consumed"]; !ok {
		t.Errorf("no sma_* counters with an agent")
	}
}

// TestIBCorruptDiscarded: a bit error on the emulated wire into the
// switch damages the packet anywhere; the switch's VCRC check discards
// it (drop_malformed) and it never reaches h2. A corrupted link packet
// fails its LPCRC the same way.
func TestIBCorruptDiscarded(t *testing.T) {
	td := startIBDaemon(t)
	h1, h2 := td.peer[0], td.peer[1]
	h2.grant(1, 0, ibBlocks)
	waitFor(t, "h2's credit", func() bool { return td.counters(t, "p2")["vl1_tx_credits"] == ibBlocks })
	one := 1.0
	var st StatusResponse
	td.call(t, Request{Op: "link", Port: "p1", Corrupt: &one}, &st)
	if !st.OK {
		t.Fatalf("corrupt: %+v", st)
	}
	h1.grant(0, 0, ibBlocks)
	h1.send(ibData(t, 0, 1, td.spec.Node("h1").LID, td.spec.Node("h2").LID, 100))
	waitFor(t, "two malformed drops", func() bool { return td.counters(t, "p1")["drop_malformed"] == 2 })
	if c := td.counters(t, "p1"); c["link_corrupt_rx"] != 2 {
		t.Errorf("link_corrupt_rx %d, want 2", c["link_corrupt_rx"])
	}
	if b := h2.next(100*time.Millisecond, isData); b != nil {
		t.Errorf("a corrupted packet was forwarded")
	}
}
