package swd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/internal/ctlline"
	"github.com/emufabric/emufabric/lab"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/rt"
	"github.com/emufabric/emufabric/sim"
	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

var update = flag.Bool("update", false, "rewrite golden files")

const testLab = "testdata/two-hosts.yaml"

// Addresses the lab file gives its nodes (lab.Load defaults: MAC
// 02:00:00:00:NN:NN and IPv4 10.0.x.y from the node index).
var (
	macH1 = wire.MAC{2, 0, 0, 0, 0, 2}
	macH2 = wire.MAC{2, 0, 0, 0, 0, 3}
	ipH1  = [4]byte{10, 0, 0, 1}
	ipH2  = [4]byte{10, 0, 0, 2}
)

// testDaemon runs a daemon whose two ports listen on seqpacket sockets in
// a temporary directory, with the test as both hosts: no root needed.
type testDaemon struct {
	d    *Daemon
	ctl  string
	link [2]*rt.Seqpacket
}

func startTestDaemon(t testing.TB, connect bool) *testDaemon {
	t.Helper()
	return startTestDaemonLab(t, testLab, connect)
}

// startTestDaemonLab is startTestDaemon with sw1 of another lab file
// (two hosts on p1 and p2).
func startTestDaemonLab(t testing.TB, labFile string, connect bool) *testDaemon {
	t.Helper()
	dir := t.TempDir()
	o := Options{Lab: labFile, Node: "sw1", Control: filepath.Join(dir, "ctl.sock"), Metrics: "127.0.0.1:0"}
	for _, p := range []string{"p1", "p2"} {
		b, err := ParsePortFlag(p + "=seqpacket-listen:" + filepath.Join(dir, p+".sock"))
		if err != nil {
			t.Fatal(err)
		}
		o.Ports = append(o.Ports, b)
	}
	var logBuf bytes.Buffer
	d, err := New(o, &logBuf)
	if err != nil {
		t.Fatal(err)
	}
	d.Start()
	td := &testDaemon{d: d, ctl: o.Control}
	t.Cleanup(func() {
		for _, l := range td.link {
			if l != nil {
				l.Close()
			}
		}
		d.Close()
		for _, p := range []string{o.Control, o.Ports[0].Path, o.Ports[1].Path} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("socket file %s left after Close", p)
			}
		}
		if t.Failed() {
			t.Logf("daemon log:\n%s", logBuf.String())
		}
	})
	if fi, err := os.Stat(o.Control); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("control socket: %v, mode %v; want 0600", err, fi.Mode())
	}
	if connect {
		for i, b := range o.Ports {
			if td.link[i], err = rt.DialSeqpacket(b.Path); err != nil {
				t.Fatal(err)
			}
		}
		// Wait until the daemon attached both peers.
		waitFor(t, "ports up", func() bool {
			var st StatusResponse
			td.call(t, Request{Op: "status"}, &st)
			return len(st.Ports) == 2 && st.Ports[0].Up && st.Ports[1].Up
		})
	}
	return td
}

// waitFor polls cond until it holds. The bound is generous: a loaded CI
// machine may stall the daemon for seconds; a passing run never waits it.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// call sends one request on a fresh connection and decodes the response.
func (td *testDaemon) call(t testing.TB, req any, resp any) {
	t.Helper()
	c, err := net.Dial("unix", td.ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(line, resp); err != nil {
		t.Fatalf("response %q: %v", line, err)
	}
}

func (td *testDaemon) counters(t testing.TB, port string) map[string]uint64 {
	t.Helper()
	var r CountersResponse
	td.call(t, Request{Op: "counters", Port: port}, &r)
	if !r.OK || len(r.Ports) != 1 || r.Ports[0].Port != port {
		t.Fatalf("counters %s: %+v", port, r)
	}
	return r.Ports[0].Counters
}

// udpFrame is an IPv4/UDP frame from h1 to h2 with n payload bytes.
func udpFrame(n int, dscp uint8) []byte {
	b := make([]byte, wire.EthernetSize+wire.IPv4MinSize+wire.UDPSize+n)
	wire.EncodeEthernet(b, &wire.EthernetFields{Dst: macH2, Src: macH1, EtherType: wire.EtherTypeIPv4})
	ip := wire.IPv4(b[wire.EthernetSize:])
	ip.Encode(&wire.IPv4Fields{DSCP: dscp, TotalLength: uint16(len(b) - wire.EthernetSize), TTL: 64, Protocol: wire.IPProtoUDP, Src: ipH1, Dst: ipH2})
	u := wire.UDP(b[wire.EthernetSize+wire.IPv4MinSize:])
	u.Encode(&wire.UDPFields{SrcPort: 1000, DstPort: 2000, Length: uint16(wire.UDPSize + n)})
	for i := range n {
		b[len(b)-n+i] = byte(i)
	}
	return b
}

func send(t *testing.T, l *rt.Seqpacket, frames ...[]byte) {
	t.Helper()
	if n, err := l.Write(frames, 0); err != nil || n != len(frames) {
		t.Fatalf("write: %d of %d: %v", n, len(frames), err)
	}
}

// recv reads n frames from l.
func recv(t *testing.T, l *rt.Seqpacket, n int) [][]byte {
	t.Helper()
	var out [][]byte
	bufs := make([][]byte, 16)
	sizes := make([]int, 16)
	for i := range bufs {
		bufs[i] = make([]byte, 9600)
	}
	done := make(chan error, 1)
	go func() {
		for len(out) < n {
			k, err := l.Read(bufs, sizes, 0)
			if err != nil {
				done <- err
				return
			}
			for i := range k {
				if isLinkState(bufs[i][:sizes[i]]) {
					continue // the switches' routing, not the frames under test
				}
				out = append(out, append([]byte(nil), bufs[i][:sizes[i]]...))
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("received %d of %d frames", len(out), n)
	}
	return out
}

func TestForwardCountersAndLink(t *testing.T) {
	td := startTestDaemon(t, true)
	f := udpFrame(100, 0)
	send(t, td.link[0], f, f, f)
	got := recv(t, td.link[1], 3)
	for _, g := range got {
		if !bytes.Equal(g, f) {
			t.Fatalf("forwarded frame differs:\n got %x\nwant %x", g, f)
		}
	}
	// p2's writer goroutine counts its frames after the write that let the
	// peer read them (as below, after the delay).
	waitFor(t, "p2's transport counters", func() bool { return td.counters(t, "p2")["transport_tx_frames"] == 3 })
	c1, c2 := td.counters(t, "p1"), td.counters(t, "p2")
	for name, want := range map[string]uint64{"rx_packets_phy": 3, "rx_bytes_phy": 3 * uint64(len(f)), "rx_prio0_packets": 3, "transport_rx_frames": 3} {
		if c1[name] != want {
			t.Errorf("p1 %s = %d, want %d", name, c1[name], want)
		}
	}
	for name, want := range map[string]uint64{"tx_packets_phy": 3, "tx_prio0_packets": 3, "transport_tx_frames": 3, "link_down_events_phy": 0} {
		if c2[name] != want {
			t.Errorf("p2 %s = %d, want %d", name, c2[name], want)
		}
	}
	// Down until its peer connected is not a link lost.
	if n := c1["link_down_events_phy"]; n != 0 {
		t.Errorf("p1 link_down_events_phy = %d before any link went down", n)
	}

	// Link down: frames towards p2 are dropped with a reason.
	var st StatusResponse
	td.call(t, Request{Op: "link", Port: "p2", State: "down"}, &st)
	if !st.OK || st.Port == nil || st.Port.Up || st.Port.AdminUp {
		t.Fatalf("link down: %+v", st)
	}
	send(t, td.link[0], f)
	waitFor(t, "link_down drop", func() bool { return td.counters(t, "p2")["drop_link_down"] == 1 })
	if n := td.counters(t, "p2")["link_down_events_phy"]; n != 1 {
		t.Errorf("p2 link_down_events_phy = %d after one link down", n)
	}
	td.call(t, Request{Op: "link", Port: "p2", State: "up"}, &st)
	if !st.OK || !st.Port.Up {
		t.Fatalf("link up: %+v", st)
	}

	// Loss 1: everything the switch sends on p2 is lost on the wire.
	one, zero := 1.0, 0.0
	td.call(t, Request{Op: "link", Port: "p2", Loss: &one}, &st)
	if !st.OK || st.Port.Loss != 1 {
		t.Fatalf("loss: %+v", st)
	}
	send(t, td.link[0], f, f)
	waitFor(t, "link loss", func() bool { return td.counters(t, "p2")["link_loss_tx"] == 2 })
	td.call(t, Request{Op: "link", Port: "p2", Loss: &zero, Rate: "10G", Delay: "2ms"}, &st)
	if !st.OK || st.Port.Rate != "10G" || st.Port.Delay != "2ms" || st.Port.Loss != 0 {
		t.Fatalf("rate/delay: %+v", st)
	}
	send(t, td.link[0], f)
	recv(t, td.link[1], 1)
	// The writer goroutine counts a frame after the peer may have read it.
	waitFor(t, "transport counters", func() bool { return td.counters(t, "p2")["transport_tx_frames"] == 4 })
	if c := td.counters(t, "p2"); c["tx_packets_phy"] != 6 {
		t.Errorf("after loss and delay: tx_packets_phy %d, want 6: the switch sent the lost frames too", c["tx_packets_phy"])
	}
}

// TestLinkSchedule: a link op's schedule takes the port down and up at
// its steps' times from the request; a new schedule replaces the old one,
// an empty one cancels it.
func TestLinkSchedule(t *testing.T) {
	td := startTestDaemon(t, true)
	status := func() *PortStatus {
		var st StatusResponse
		td.call(t, Request{Op: "status"}, &st)
		for i := range st.Ports {
			if st.Ports[i].Port == "p2" {
				return &st.Ports[i]
			}
		}
		t.Fatalf("no p2 in %+v", st)
		return nil
	}
	var st StatusResponse
	// The up step leaves the test 2 s to see the port down and have a frame
	// dropped there: a shorter window is missed when the machine stalls.
	td.call(t, Request{Op: "link", Port: "p2", Schedule: []lab.ScheduleStep{{After: "0", State: "down"}, {After: "2s", State: "up"}}}, &st)
	if !st.OK || st.Port == nil || st.Port.SchedulePending != 2 || !st.Port.AdminUp {
		t.Fatalf("schedule set: %+v (want both steps pending, the port still up)", st.Port)
	}
	waitFor(t, "the scheduled down", func() bool { return !status().AdminUp })
	f := udpFrame(100, 0)
	send(t, td.link[0], f)
	waitFor(t, "link_down drop", func() bool { return td.counters(t, "p2")["drop_link_down"] == 1 })
	waitFor(t, "the scheduled up", func() bool { p := status(); return p.AdminUp && p.Up && p.SchedulePending == 0 })
	send(t, td.link[0], f)
	recv(t, td.link[1], 1)

	// Replaced, then cancelled: the far step never runs.
	td.call(t, Request{Op: "link", Port: "p2", Schedule: []lab.ScheduleStep{{After: "100s", State: "down"}}}, &st)
	if !st.OK || st.Port.SchedulePending != 1 {
		t.Fatalf("second schedule: %+v", st.Port)
	}
	st = StatusResponse{} // a fresh one: a zero SchedulePending is left out of the JSON
	td.call(t, Request{Op: "link", Port: "p2", Schedule: []lab.ScheduleStep{}}, &st)
	if !st.OK || st.Port.SchedulePending != 0 || !st.Port.AdminUp {
		t.Fatalf("empty schedule: %+v (want nothing pending, the port up)", st.Port)
	}

	// A state set by hand takes the link over: the pending steps go.
	td.call(t, Request{Op: "link", Port: "p2", Schedule: []lab.ScheduleStep{{After: "100s", State: "up"}}}, &st)
	st = StatusResponse{}
	td.call(t, Request{Op: "link", Port: "p2", State: "down"}, &st)
	if !st.OK || st.Port.SchedulePending != 0 || st.Port.AdminUp {
		t.Fatalf("down by hand: %+v (want the port down, nothing pending)", st.Port)
	}
	td.call(t, Request{Op: "link", Port: "p2", State: "up"}, &st)
}

func TestControlErrors(t *testing.T) {
	td := startTestDaemon(t, false)
	nan := 2.0
	cases := []struct {
		req  Request
		want string
	}{
		{Request{}, `missing "op"`},
		{Request{Op: "reboot"}, `unknown op "reboot"`},
		{Request{Op: "counters", Port: "p9"}, `no port "p9" on sw1 (ports: p1, p2`},
		{Request{Op: "link", Port: "p9", State: "down"}, `no port "p9"`},
		{Request{Op: "link", Port: "p1"}, `give "state"`},
		{Request{Op: "link", Port: "p1", State: "sideways"}, `state "sideways"`},
		{Request{Op: "link", Port: "p1", Rate: "fast"}, `rate "fast"`},
		{Request{Op: "link", Port: "p1", Delay: "soon"}, `delay "soon"`},
		{Request{Op: "link", Port: "p1", Loss: &nan}, "loss 2: a probability"},
		{Request{Op: "link", Port: "p1", Schedule: []lab.ScheduleStep{{After: "1s", State: "down"}, {After: "1s", State: "up"}}}, "link: schedule[1].after \"1s\": not after"},
		{Request{Op: "link", Port: "p1", State: "down", Schedule: []lab.ScheduleStep{{After: "1s", State: "off"}}}, `schedule[0].state "off"`},
		{Request{Op: "capture", Ports: []string{"p1", "p7"}}, `no port "p7"`},
		{Request{Op: "capture", Ports: []string{"p1", "p1"}}, "named twice"},
	}
	for _, c := range cases {
		var r StatusResponse
		td.call(t, c.req, &r)
		if r.OK || !strings.Contains(r.Error, c.want) {
			t.Errorf("%+v: got ok=%v error %q, want %q", c.req, r.OK, r.Error, c.want)
		}
	}
	// A malformed line is answered and the connection stays usable.
	c, err := net.Dial("unix", td.ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "{not json\n{\"op\":\"status\"}\n")
	br := bufio.NewReader(c)
	var r1, r2 StatusResponse
	l1, _ := br.ReadBytes('\n')
	l2, _ := br.ReadBytes('\n')
	json.Unmarshal(l1, &r1)
	json.Unmarshal(l2, &r2)
	if r1.OK || !strings.HasPrefix(r1.Error, "bad request") || !r2.OK || r2.Node != "sw1" || r2.Lab != "swd2" || len(r2.Ports) != 2 {
		t.Errorf("malformed then status: %q, %q", l1, l2)
	}
	if p := r2.Ports[0]; p.Up || p.Connected || p.Transport != "seqpacket-listen" || p.Speed != "100G" {
		t.Errorf("unconnected port status: %+v", p)
	}
}

// A request line is bounded: a client that streams bytes without a newline
// gets an error and a closed connection, not a daemon that buffers all it
// sends.
func TestControlBoundsARequestLine(t *testing.T) {
	td := startTestDaemon(t, false)
	c, err := net.Dial("unix", td.ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		// The daemon closes the connection half-way: the write fails.
		c.Write([]byte(strings.Repeat(" ", 2*ctlline.MaxRequest) + "{\"op\":\"status\"}\n"))
	}()
	line, err := bufio.NewReader(c).ReadBytes('\n')
	var r StatusResponse
	if err != nil || json.Unmarshal(line, &r) != nil || r.OK || !strings.Contains(r.Error, "request longer than") {
		t.Fatalf("an over-long request: %q, %v", line, err)
	}
	// And the daemon still answers others.
	var st StatusResponse
	td.call(t, Request{Op: "status"}, &st)
	if !st.OK {
		t.Fatalf("status after an over-long request: %+v", st)
	}
}

// TestCapture streams pcapng over the control socket and decodes it: one
// interface per port, rx and tx records with comments, the flood of a
// broadcast, a drop with its reason.
func TestCapture(t *testing.T) {
	td := startTestDaemon(t, true)
	c, br := openCapture(t, td.ctl, `{"op":"capture","ports":["p1","p2"]}`, `{"ok":true,"ports":["p1","p2"]}`)
	f := udpFrame(64, 0)
	bcast := udpFrame(10, 0)
	copy(bcast[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	unknown := udpFrame(10, 0)
	copy(unknown[0:6], []byte{2, 9, 9, 9, 9, 9}) // no FDB entry...
	copy(unknown[30:34], []byte{192, 0, 2, 1})   // ...and no route
	wire.IPv4(unknown[wire.EthernetSize:]).Encode(&wire.IPv4Fields{TotalLength: uint16(len(unknown) - wire.EthernetSize), TTL: 64, Protocol: wire.IPProtoUDP, Src: ipH1, Dst: [4]byte{192, 0, 2, 1}})
	sent := time.Now()
	send(t, td.link[0], f, bcast, unknown)
	recv(t, td.link[1], 2)
	// The next hop (the test) had both frames by now: the switch's tx
	// records of them must not be stamped later than that.
	received := time.Now()
	// The drop leaves nothing to receive; wait for its counter so that the
	// PFC frame below, read by p2's reader, cannot overtake it.
	waitFor(t, "the unrouted frame dropped", func() bool { return td.counters(t, "p1")["drop_no_route"] == 1 })
	// h2 pauses priority 3 of the switch's p2 with a real PFC frame.
	var times [8]uint16
	times[3] = 0xFFFF
	pfc := make([]byte, wire.MACControlFrameSize)
	wire.EncodePFC(pfc, macH2, 1<<3, &times)
	send(t, td.link[1], pfc)

	r, err := capture.Open(br)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		iface   int
		comment string
		data    []byte
	}{
		{0, "rx", f},
		{1, "tx", f},
		{0, "rx: flooded (broadcast/multicast)", bcast},
		{1, "tx: flooded (broadcast/multicast)", bcast},
		{0, "rx: dropped at p1: no_route (priority 0)", unknown},
		{1, "rx: PFC received: prio3 XOFF 65535 quanta; paused p2 priority 3 for 65535 quanta", pfc},
	}
	var rec capture.Record
	for i, w := range want {
		if err := r.Next(&rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if rec.Interface != w.iface || rec.Comment != w.comment || !bytes.Equal(rec.Data, w.data) || rec.LinkType != capture.LinkTypeEthernet {
			t.Errorf("record %d: interface %d comment %q len %d, want %d %q len %d", i, rec.Interface, rec.Comment, len(rec.Data), w.iface, w.comment, len(w.data))
		}
		if i < 4 && (rec.Timestamp.Before(sent.Truncate(time.Microsecond)) || rec.Timestamp.After(received)) {
			t.Errorf("record %d (%s) stamped %v, outside [%v sent, %v received at the next hop]", i, rec.Comment, rec.Timestamp, sent, received)
		}
	}
	if got := td.counters(t, "p2")["rx_prio3_pause"]; got != 1 {
		t.Errorf("p2 rx_prio3_pause = %d, want 1", got)
	}
	// The client half-closes: the daemon stops capturing, writes what is
	// still queued and a statistics block per port, and closes.
	if err := c.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	n := []int64{0, 0}
	for _, w := range want {
		n[w.iface]++
	}
	for {
		err := r.Next(&rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n[rec.Interface]++
	}
	st := r.InterfaceStats()
	for i := range n {
		if s, ok := st[i]; !ok || s.Drop != 0 || s.Recv != n[i] {
			t.Errorf("interface %d: statistics %+v (present %v), want isb_ifdrop 0, isb_ifrecv %d", i, s, ok, n[i])
		}
	}
	// The daemon notices the client left and stops capturing.
	waitFor(t, "capture end", func() bool {
		var capturing bool
		td.d.onLoop(func() { capturing = td.d.capturing })
		return !capturing
	})
}

// TestCaptureECNNote: a CE mark is noted on the frame as the egress port
// sends it ("tx: ECN CE marked at p2 ..."), whose bytes carry CE; the
// ingress port's rx record of the same frame was written before the
// egress queue marked it, and says only "rx" (docs/capture.md promises
// this placement).
func TestCaptureECNNote(t *testing.T) {
	td := startTestDaemonLab(t, filepath.Join("testdata", "ecn.yaml"), true)
	_, br := openCapture(t, td.ctl, `{"op":"capture","ports":["p1","p2"]}`, `{"ok":true,"ports":["p1","p2"]}`)
	f := udpFrame(64, 26) // DSCP 26: priority 3, queue 3
	if !wire.SetIPECN(f[wire.EthernetSize:], wire.ECNECT0) {
		t.Fatal("SetIPECN")
	}
	send(t, td.link[0], f)
	got := recv(t, td.link[1], 1)
	if ecn := wire.IPv4(got[0][wire.EthernetSize:]).ECN(); ecn != wire.ECNCE {
		t.Fatalf("the frame left p2 with ECN %d, want CE (%d): the lab's WRED profile did not mark it", ecn, wire.ECNCE)
	}
	r, err := capture.Open(br)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		iface   int
		comment string
		ecn     uint8
	}{
		{0, "rx", wire.ECNECT0},
		{1, "tx: ECN CE marked at p2 queue 3 depth 0 bytes", wire.ECNCE},
	}
	var rec capture.Record
	for i, w := range want {
		if err := r.Next(&rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		ecn := wire.IPv4(rec.Data[wire.EthernetSize:]).ECN()
		if rec.Interface != w.iface || rec.Comment != w.comment || ecn != w.ecn {
			t.Errorf("record %d: interface %d comment %q ECN %d, want %d %q ECN %d", i, rec.Interface, rec.Comment, ecn, w.iface, w.comment, w.ecn)
		}
	}
}

func TestPFCCaptureNote(t *testing.T) {
	var times [8]uint16
	times[3] = 0xFFFF
	b := make([]byte, wire.MACControlFrameSize)
	wire.EncodePFC(b, wire.MAC{2, 0, 0, 0, 0, 9}, 1<<3|1<<4, &times)
	if got, want := pfcNote(b, "sent"), "PFC sent: prio3 XOFF 65535 quanta prio4 XON"; got != want {
		t.Errorf("pfcNote = %q, want %q", got, want)
	}
	// A refresh (no XOFF event put a why on it) says so; an XON and
	// an 802.3x PAUSE are never refreshes.
	if got, want := pfcRefreshNote(b, "p1"), "XOFF refreshed on p1: priority 3 still paused (its PG above XON)"; got != want {
		t.Errorf("pfcRefreshNote = %q, want %q", got, want)
	}
	times[4] = 0xFFFF
	wire.EncodePFC(b, wire.MAC{2, 0, 0, 0, 0, 9}, 1<<3|1<<4, &times)
	if got, want := pfcRefreshNote(b, "p1"), "XOFF refreshed on p1: priorities 3,4 still paused (their PGs above XON)"; got != want {
		t.Errorf("pfcRefreshNote = %q, want %q", got, want)
	}
	times[3], times[4] = 0, 0
	wire.EncodePFC(b, wire.MAC{2, 0, 0, 0, 0, 9}, 1<<3, &times)
	if got := pfcRefreshNote(b, "p1"); got != "" {
		t.Errorf("pfcRefreshNote of an XON = %q", got)
	}
	wire.EncodePause(b, wire.MAC{2, 0, 0, 0, 0, 9}, 100)
	if got := pfcRefreshNote(b, "p1"); got != "" {
		t.Errorf("pfcRefreshNote of a PAUSE = %q", got)
	}
	if got, want := pfcNote(b, "received"), "PAUSE received: 100 quanta"; got != want {
		t.Errorf("pfcNote = %q, want %q", got, want)
	}
	if got := pfcNote(b[:15], "sent"); got != "malformed MAC Control frame sent" {
		t.Errorf("pfcNote of a short frame = %q", got)
	}
}

// TestMetrics checks the exposition against a golden file (the uptime
// sample masked) and the naming rules on every family.
func TestMetrics(t *testing.T) {
	td := startTestDaemon(t, false)
	addr := td.d.MetricsAddr()
	resp, err := httpGet("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if resp.contentType != metricsContentType {
		t.Errorf("content type %q", resp.contentType)
	}
	body := regexp.MustCompile(`(?m)^(emu_uptime_seconds\{[^}]*\}) .*$`).ReplaceAllString(resp.body, "$1 UPTIME")
	body = regexp.MustCompile(`goversion="[^"]*"`).ReplaceAllString(body, `goversion="GO"`)
	// How late the loop ran is the machine's (rt.Lag).
	body = regexp.MustCompile(`(?m)^(emu_loop_\w+\{[^}]*\}) .*$`).ReplaceAllString(body, "$1 LAG")
	golden := filepath.Join("testdata", "metrics.golden")
	if *update {
		os.WriteFile(golden, []byte(body), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if body != string(want) {
		t.Errorf("metrics differ from %s (run with -update to accept):\n%s", golden, body)
	}
	checkMetricNames(t, body)
	for _, l := range []string{
		`emu_pfc_pause_frames_received_total{lab="swd2",node="sw1",port="p1",priority="3"} 0`,
		`emu_port_up{lab="swd2",node="sw1",port="p2"} 0`,
		`emu_link_rate_bytes_per_second{lab="swd2",node="sw1",port="p1"} 1.25e+10`,
		`emu_loop_late_total{lab="swd2",node="sw1"} LAG`,
	} {
		if !strings.Contains(body, l+"\n") {
			t.Errorf("missing sample %s", l)
		}
	}
}

// checkMetricNames applies the naming rules to every family of an
// exposition: emu_ snake case, counters and only counters ending in
// _total, the priority in a label, and direction words spelled out as
// node_exporter spells them (its netdev and ethtool collectors write rx
// and tx as received and transmitted, its infiniband collector
// PortXmitWait as port_transmit_wait), so that one query finds the same
// word on a switch and on emunic.
func checkMetricNames(t *testing.T, body string) {
	t.Helper()
	typeRe := regexp.MustCompile(`^# TYPE (\S+) (counter|gauge)$`)
	nameRe := regexp.MustCompile(`^emu_[a-z0-9_]+$`)
	abbrevRe := regexp.MustCompile(`(^|_)(rx|tx|xmit|rcv)(_|$)`)
	for _, l := range strings.Split(body, "\n") {
		m := typeRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name, typ := m[1], m[2]
		if !nameRe.MatchString(name) {
			t.Errorf("%s: not emu_ snake case", name)
		}
		if (typ == "counter") != strings.HasSuffix(name, "_total") {
			t.Errorf("%s: a %s; counters and only counters end in _total", name, typ)
		}
		if strings.Contains(name, "prio") && !strings.Contains(name, "priority") {
			t.Errorf("%s: priority belongs in a label", name)
		}
		if abbrevRe.MatchString(name) {
			t.Errorf("%s: rx, tx, xmit and rcv are spelled out (received, transmitted, transmit)", name)
		}
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	ctl := filepath.Join(dir, "c.sock")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\ntopology:\n  nodes:\n    sw1: {kind: router}\n"), 0o600)
	cases := []struct {
		o    Options
		want string
	}{
		{Options{Lab: filepath.Join(dir, "none.yaml"), Node: "sw1", Control: ctl}, "--lab " + filepath.Join(dir, "none.yaml")},
		{Options{Lab: bad, Node: "sw1", Control: ctl}, "--lab " + bad},
		{Options{Lab: testLab, Node: "sw9", Control: ctl}, "--node sw9: no such node"},
		{Options{Lab: testLab, Node: "h1", Control: ctl}, "--node h1: node is a nic, not a switch"},
		{Options{Lab: testLab, Node: "sw1", Control: ctl, Ports: []PortBind{{Port: "p7", URI: "tap:x", Kind: TAPLink, IfName: "x"}}}, "--port p7=tap:x: switch sw1 has no port p7"},
		{Options{Lab: testLab, Node: "sw1", Control: ctl, Ports: []PortBind{{Port: "p1", URI: "seqpacket-listen:/nonexistent-dir/x.sock", Kind: SeqpacketListen, Path: "/nonexistent-dir/x.sock"}}}, "--port p1=seqpacket-listen:/nonexistent-dir/x.sock"},
		{Options{Lab: testLab, Node: "sw1", Control: "/nonexistent-dir/c.sock"}, "--control /nonexistent-dir/c.sock"},
	}
	for _, c := range cases {
		d, err := New(c.o, io.Discard)
		if err == nil {
			d.Close()
			t.Errorf("%+v: started", c.o)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %q, want %q", err, c.want)
		}
	}
	if _, err := os.Stat(ctl); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed start left %s", ctl)
	}
}

type httpResp struct{ body, contentType string }

func httpGet(url string) (httpResp, error) {
	resp, err := http.Get(url)
	if err != nil {
		return httpResp{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return httpResp{string(b), resp.Header.Get("Content-Type")}, err
}

// openCapture sends a capture request on the daemon's control socket,
// checks the first line of the answer starts with want, and returns the
// connection and a reader positioned at the capture stream; the
// connection closes with the test at the latest.
func openCapture(t *testing.T, ctl, req, want string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("unix", ctl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, req+"\n")
	br := bufio.NewReader(c)
	if line, err := br.ReadBytes('\n'); err != nil || !bytes.HasPrefix(line, []byte(want)) {
		t.Fatalf("capture response %q: %v", line, err)
	}
	return c, br
}

// TestCaptureGapNoted: a capture client that falls behind loses records
// (capture_drop), and the next record it gets says how many went before
// it, in its comment, as an emunic's capture does. Records lost after a
// port's last record have no record to say so: the statistics block at
// the capture's end counts every loss (isb_ifdrop), as capture_drop does.
func TestCaptureGapNoted(t *testing.T) {
	td := startTestDaemon(t, true)
	s := newCaptureSubQueues([]int{0}, false, 1, 1)
	data := udpFrame(64, 0)
	var first capRecord
	td.d.onLoop(func() {
		p := td.d.ports[0]
		p.caps = append(p.caps, s)
		for range 3 { // one queued, two lost
			td.d.emit(p, capDir(0), data, "rx", time.Now())
		}
		first, _ = s.q.Next()
		td.d.emit(p, capDir(0), data, "rx", time.Now()) // queued, after two lost
		for range 3 {                                   // lost: no record follows
			td.d.emit(p, capDir(0), data, "rx", time.Now())
		}
		p.caps = p.caps[:len(p.caps)-1]
		s.q.Close()
	})
	if first.dropped != 0 {
		t.Fatalf("dropped before the first record: %d, want 0", first.dropped)
	}
	drops := td.counters(t, "p1")["capture_drop"]
	if drops != 5 {
		t.Errorf("capture_drop %d, want 5", drops)
	}
	// Written out, the record's comment carries the gap before it, the
	// statistics block all of them.
	var buf bytes.Buffer
	if err := td.d.streamCapture(&buf, s, []int{0}); err != nil {
		t.Fatal(err)
	}
	r, err := capture.Open(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var rec capture.Record
	if err := r.Next(&rec); err != nil || rec.Comment != "rx; 2 frames before this one not captured (slow reader)" {
		t.Errorf("record comment %q, %v", rec.Comment, err)
	}
	if err := r.Next(&rec); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last record: %v", err)
	}
	if st, ok := r.InterfaceStats()[0]; !ok || st.Drop != int64(drops) || st.Recv != 7 {
		t.Errorf("statistics %+v (present %v): want isb_ifdrop %d (capture_drop), isb_ifrecv 7", st, ok, drops)
	}
}

// TestRateChangeKeepsLossless: a rate set at run time is the port's: the
// switch engine serializes at it, so a burst toward the slower link waits
// in the egress queue of its lossless priority, where PFC and ECN act,
// and every frame arrives. Before, only the wire behind the port slowed
// down: the engine sent at the port's old speed into a drop-tail wire,
// which dropped the lossless priority's frames (link_queue_drop) and sent
// no PFC.
func TestRateChangeKeepsLossless(t *testing.T) {
	td := startTestDaemon(t, true)
	var st StatusResponse
	td.call(t, Request{Op: "link", Port: "p2", Rate: "100M"}, &st)
	if !st.OK || st.Port.Rate != "100M" || st.Port.Speed != "100M" {
		t.Fatalf("rate 100M: %+v", st.Port)
	}
	speed := make(chan uint64, 1)
	td.d.loop.Post(func() { speed <- td.d.sw.PortSpeed(1) })
	if s := <-speed; s != 1e8 {
		t.Fatalf("the engine's p2 runs at %d b/s after rate 100M", s)
	}
	// 1000 frames of 1 KB at priority 3 (DSCP 26): 83 ms of the 100 Mb/s
	// wire, sent in a fraction of that even on a loaded machine.
	const n = 1000
	f := udpFrame(1000, 26)
	got := make(chan int, 1)
	go func() { got <- len(recv(t, td.link[1], n)) }()
	for i := 0; i < n; i += 50 {
		batch := make([][]byte, 50)
		for k := range batch {
			batch[k] = f
		}
		send(t, td.link[0], batch...)
	}
	if k := <-got; k != n {
		t.Fatalf("%d of %d frames arrived", k, n)
	}
	c2 := td.counters(t, "p2")
	if c2["link_queue_drop"] != 0 || c2["tx_prio3_packets"] != n {
		t.Errorf("p2: link_queue_drop %d, tx_prio3_packets %d (want 0, %d)", c2["link_queue_drop"], c2["tx_prio3_packets"], n)
	}
	// The burst waited in the switch's queue (where PFC and ECN see it),
	// not on the wire.
	if w := c2["queue3_watermark"]; w < 100_000 {
		t.Errorf("p2 queue3_watermark %d: a 1 MB burst far above the port's rate did not queue in the switch", w)
	}

	td.call(t, Request{Op: "link", Port: "p2", Rate: "0"}, &st)
	if st.OK {
		t.Errorf("rate 0 accepted: %+v", st.Port)
	}
}

// TestCaptureEndsWithStatsOnClose: a daemon that stops ends its captures
// with the records still queued and the statistics blocks, not by
// cutting the connection.
func TestCaptureEndsWithStatsOnClose(t *testing.T) {
	td := startTestDaemon(t, true)
	_, br := openCapture(t, td.ctl, `{"op":"capture","ports":["p1"]}`, `{"ok":true,"ports":["p1"]}`)
	r, err := capture.Open(br)
	if err != nil {
		t.Fatal(err)
	}
	send(t, td.link[0], udpFrame(64, 0))
	recv(t, td.link[1], 1)
	var rec capture.Record
	if err := r.Next(&rec); err != nil || rec.Comment != "rx" {
		t.Fatalf("first record %q: %v", rec.Comment, err)
	}
	td.d.Close()
	for {
		err := r.Next(&rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the stream after Close: %v", err)
		}
	}
	if st, ok := r.InterfaceStats()[0]; !ok || st.Drop != 0 || st.Recv < 1 {
		t.Errorf("statistics %+v (present %v): want isb_ifdrop 0, isb_ifrecv >= 1", st, ok)
	}
}

// TestLinkStateNote: a captured advertisement says whose it is and what
// it says is down.
func TestLinkStateNote(t *testing.T) {
	l := &wire.LinkState{Origin: "leaf1", Epoch: 3, Seq: 7, Down: []string{"p5", "p6"}}
	b := make([]byte, wire.LinkStateLen(l))
	wire.EncodeLinkState(b, wire.MAC{2}, l)
	if !isLinkState(b) {
		t.Fatal("an advertisement not recognised")
	}
	if got, want := linkStateNote(b, "sent"), "link-state advertisement sent: leaf1 (epoch 3, sequence 7), ports down: p5, p6"; got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	if got := linkStateNote(b[:20], "received"); got != "malformed link-state advertisement received" {
		t.Errorf("truncated: %q", got)
	}
}

// TestLinkSetResizesHeadroom: a rate or delay set at run time gives the
// port's lossless PGs the headroom of the link as it is now (SONiC's buffer
// manager makes a new profile when a port's speed or cable changes): at
// 400G with 10 us of delay the built-in's 300 m headroom would overflow.
func TestLinkSetResizesHeadroom(t *testing.T) {
	td := startTestDaemon(t, true)
	xoff := func() (p1, p2 int) {
		td.d.onLoop(func() { p1, p2 = td.d.sw.PGXoff(0, 3), td.d.sw.PGXoff(1, 3) })
		return
	}
	before1, before2 := xoff()
	var st StatusResponse
	td.call(t, Request{Op: "link", Port: "p2", Rate: "400G", Delay: "10us"}, &st)
	if !st.OK {
		t.Fatalf("link set: %+v", st)
	}
	after1, after2 := xoff()
	want, _ := sim.BuiltinHeadroom(400e9, 10*clock.Microsecond, 1500)
	if after2 != want || after2 <= before2 {
		t.Errorf("p2's PG 3 headroom %d bytes after 400G and 10 us (%d before), want %d", after2, before2, want)
	}
	if after1 != before1 {
		t.Errorf("p1's headroom changed: %d -> %d", before1, after1)
	}
}

// TestCaptureMergesControlInTimeOrder: control frames have a queue of
// their own (data must not crowd them out), and the writer merges the two
// by time: it wrote every queued control frame first, up to 100 ms ahead
// of the data around it (a teacher's capture of an incast).
func TestCaptureMergesControlInTimeOrder(t *testing.T) {
	td := startTestDaemon(t, true)
	s := newCaptureSubQueues([]int{0}, false, 1, controlQueue) // full after one record: the PFC frame goes to the control queue
	data := udpFrame(64, 0)
	pfc := make([]byte, wire.MACControlFrameSize)
	wire.EncodePFC(pfc, wire.MAC{2}, 1<<3, &[8]uint16{3: 0xFFFF})
	t0 := time.Now()
	td.d.onLoop(func() {
		p := td.d.ports[0]
		p.caps = append(p.caps, s)
		td.d.emit(p, capDir(0), data, "rx 1", t0)
		td.d.emit(p, capDir(1), pfc, "PFC", t0.Add(time.Millisecond))
		td.d.emit(p, capDir(0), data, "rx 2", t0.Add(2*time.Millisecond))
		p.caps = p.caps[:len(p.caps)-1]
		s.q.Close()
	})
	if n := s.q.Queued(); n != 2 {
		t.Fatalf("%d records queued, want rx 1 and the PFC frame in the control queue", n)
	}
	var buf bytes.Buffer
	if err := td.d.streamCapture(&buf, s, []int{0}); err != nil {
		t.Fatal(err)
	}
	got := captureComments(t, &buf)
	if strings.Join(got, ", ") != "rx 1, PFC; 1 frames before this one not captured (slow reader)" && strings.Join(got, ", ") != "rx 1, PFC" {
		t.Errorf("records in the order %q, want rx 1 then the PFC frame (rx 2 lost: the data queue was full)", got)
	}
}

// The records still queued when a capture ends are merged by time too:
// taken control queue first, a PFC frame was written ahead of the data
// before it.
func TestFinishCaptureMergesByTime(t *testing.T) {
	td := startTestDaemon(t, true)
	s := newCaptureSubQueues([]int{0}, false, 2, 2)
	data := udpFrame(64, 0)
	pfc := make([]byte, wire.MACControlFrameSize)
	wire.EncodePFC(pfc, wire.MAC{2}, 1<<3, &[8]uint16{3: 0xFFFF})
	t0 := time.Now()
	// The data queue takes the two data records; the PFC frames, offered
	// after, find it full and take the control queue.
	for _, r := range []capRecord{
		{ts: t0, data: data, comment: "rx 1"},
		{ts: t0.Add(2 * time.Millisecond), data: data, comment: "rx 2"},
		{ts: t0.Add(time.Millisecond), data: pfc, comment: "PFC 1"},
		{ts: t0.Add(3 * time.Millisecond), data: pfc, comment: "PFC 2"},
	} {
		if !s.q.Offer(r, r.comment[0] == 'P') {
			t.Fatalf("%s not queued", r.comment)
		}
	}
	var buf bytes.Buffer
	ng, err := capture.NewNgWriter(&buf, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ng.AddInterface(capture.Interface{LinkType: capture.LinkTypeEthernet, Name: "sw1:p1"}); err != nil {
		t.Fatal(err)
	}
	if err := td.d.finishCapture(ng, s); err != nil {
		t.Fatal(err)
	}
	got := captureComments(t, &buf)
	if strings.Join(got, ", ") != "rx 1, PFC 1, rx 2, PFC 2" {
		t.Errorf("records in the order %q, want them in time order", got)
	}
}

// captureComments reads a pcapng stream and returns its records'
// comments in order.
func captureComments(t *testing.T, b *bytes.Buffer) []string {
	t.Helper()
	recs, _, err := capture.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range recs {
		got = append(got, rec.Comment)
	}
	return got
}

// TestControlPathInUseOrMissing: a second switch given the control socket
// a live one serves is refused with that said (the live socket stays), and
// a control path in a directory that does not exist names the directory.
func TestControlPathInUseOrMissing(t *testing.T) {
	td := startTestDaemon(t, false)
	var logBuf bytes.Buffer
	_, err := New(Options{Lab: testLab, Node: "sw1", Control: td.ctl}, &logBuf)
	if err == nil || !strings.Contains(err.Error(), "a live daemon listens on "+td.ctl) {
		t.Errorf("second daemon on a live control socket: %v", err)
	}
	var st StatusResponse
	td.call(t, Request{Op: "status"}, &st) // the first still answers
	missing := filepath.Join(t.TempDir(), "nodir", "ctl.sock")
	_, err = New(Options{Lab: testLab, Node: "sw1", Control: missing}, &logBuf)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("control socket in a missing directory: %v", err)
	}
}
