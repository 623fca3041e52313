package nicd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/rt"
	"github.com/emufabric/emufabric/wire/capture"
	"golang.org/x/sys/unix"
)

// testLab writes a two-NIC back-to-back lab file and loads it.
func testLab(t testing.TB, extra string) *lab.Spec {
	t.Helper()
	return specFrom(t, `name: b2b
topology:
  defaults: {rate: 100G, delay: 1us, mtu: 4200}
  nodes:
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "h2:eth0"]
`+extra)
}

// specFrom loads a lab file written from y.
func specFrom(t testing.TB, y string) *lab.Spec {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lab.yaml")
	if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	spec, err := lab.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// pairOfDaemons starts h1 and h2 in this process, linked by a seqpacket
// socketpair, without TAPs, each with a control socket.
func pairOfDaemons(t testing.TB, spec *lab.Spec) (d [2]*Daemon, ctl [2]string) {
	t.Helper()
	a, b, err := rt.SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, link := range []rt.Link{a, b} {
		node := []string{"h1", "h2"}[i]
		ctl[i] = filepath.Join(dir, node+".sock")
		d[i], err = Start(Options{Spec: spec, Node: node, Link: link, Control: ctl[i]})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d[i].Close() })
	}
	return d, ctl
}

func dial(t testing.TB, path string) *Client {
	t.Helper()
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestParsePortURI(t *testing.T) {
	for _, c := range []struct {
		in      string
		kind    string
		wantErr string
	}{
		{"seqpacket-listen:/run/x.sock", "seqpacket-listen", ""},
		{"seqpacket-dial:/run/x.sock", "seqpacket-dial", ""},
		{"udp:127.0.0.1:4000,127.0.0.1:4001", "udp", ""},
		{"udp:[::1]:4000,[::1]:4001", "udp", ""},
		{"seqpacket-dial:relative.sock", "", "must be absolute"},
		{"udp:127.0.0.1:4000", "", "want udp:"},
		{"udp:127.0.0.1:4000,127.0.0.1:0", "", "remote port"},
		{"udp:nonsense,127.0.0.1:1", "", "local address"},
		{"tap:eth0@ns", "", "unknown transport"},
		{"/just/a/path", "", "want seqpacket-listen"},
		{"seqpacket-dial:/" + strings.Repeat("d", 107), "", "at most 107"},
	} {
		u, err := ParsePortURI(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "--port") {
				t.Errorf("%q: err %v, want one naming --port and %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || u.Kind != c.kind || u.String() != c.in {
			t.Errorf("%q: %+v (%q), %v", c.in, u, u.String(), err)
		}
	}
}

func TestParseTAP(t *testing.T) {
	for _, c := range []struct {
		in, name, ns string
		ok           bool
	}{
		{"eth0@emu-lab-h1", "eth0", "emu-lab-h1", true},
		{"eth0", "eth0", "", true},
		{"eth0@", "", "", false},
		{"eth0@../../etc", "", "", false},
		{"eth0@..", "", "", false},
		{"a-very-long-interface@x", "", "", false},
		{"et h0@x", "", "", false},
		{"@x", "", "", false},
		{".@x", "", "", false},
		{"..", "", "", false},
	} {
		s, err := ParseTAP(c.in)
		if (err == nil) != c.ok || c.ok && (s.Name != c.name || s.Netns != c.ns) {
			t.Errorf("%q: %+v, %v", c.in, s, err)
		}
	}
}

func TestPortMTUFor(t *testing.T) {
	for mtu, want := range map[int]int{9000: 4096, 4200: 4096, 4175: 2048, 1500: 1024, 1104: 1024, 1100: 512, 300: 0} {
		if got := PortMTUFor(mtu); got != want {
			t.Errorf("PortMTUFor(%d) = %d, want %d", mtu, got, want)
		}
	}
}

func TestNICConfig(t *testing.T) {
	spec := testLab(t, "")
	nc, err := NICConfig(spec, "h2", "")
	if err != nil {
		t.Fatal(err)
	}
	c := nc.NIC
	if c.MAC.String() != "02:00:00:00:00:02" || c.IP.String() != "10.0.0.2" || c.Rate != 100e9 || c.PortMTU != 4096 ||
		c.Trust != nic.TrustDSCP || c.PFC == nil || *c.PFC != [8]bool{3: true} || nc.Port != "eth0" || nc.Lab != "b2b" {
		t.Errorf("config %+v (pfc %v), port %q", c, c.PFC, nc.Port)
	}
	if len(nc.Notes) == 0 {
		t.Error("defaults taken without a note")
	}
	// pfc_enable of the lab's PORT_QOS_MAP is what the NIC honours.
	spec = testLab(t, "qos:\n  PORT_QOS_MAP: {pfc_enable: \"3,4\"}\n")
	if nc, err = NICConfig(spec, "h1", "eth0"); err != nil || *nc.NIC.PFC != [8]bool{3: true, 4: true} {
		t.Errorf("pfc_enable 3,4: %v %v", nc.NIC.PFC, err)
	}
	// trust pcp tags frames; a dcqcn section reaches the NIC.
	spec = testLab(t, "dcqcn: {rp_ai_rate: 100}\n")
	spec.Node("h1").Trust, spec.Node("h1").Tagged, spec.Node("h1").VID = lab.TrustPCP, true, 7
	if nc, err = NICConfig(spec, "h1", ""); err != nil || nc.NIC.Trust != nic.TrustPCP || !nc.NIC.Tagged || nc.NIC.VID != 7 ||
		nc.NIC.DCQCN == nil || nc.NIC.DCQCN.RPAIRate != 100 {
		t.Errorf("trust pcp, dcqcn: %+v %v", nc, err)
	}
	for _, c := range []struct{ node, port, want string }{
		{"h9", "", "no such node"},
		{"h1", "eth7", "has no link"},
	} {
		if _, err := NICConfig(spec, c.node, c.port); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:%s: %v, want %q", c.node, c.port, err, c.want)
		}
	}
}

func TestControlStatusCountersQos(t *testing.T) {
	d, ctl := pairOfDaemons(t, testLab(t, ""))
	c := dial(t, ctl[0])
	st, err := c.Status()
	if err != nil {
		t.Fatal(err)
	}
	if st.Node != "h1" || st.Lab != "b2b" || st.Link != LinkUp || st.GID != "::ffff:10.0.0.1" || st.PortMTU != 4096 ||
		st.MAC != "02:00:00:00:00:01" || st.Trust != "dscp" || st.Pid != os.Getpid() {
		t.Errorf("status %+v", st)
	}
	fi, err := os.Stat(ctl[0])
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("control socket %v mode %v", err, fi.Mode())
	}
	cnt, err := c.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if len(cnt.Ports) != 1 || cnt.Ports[0].Port != "eth0" {
		t.Fatalf("ports %+v", cnt.Ports)
	}
	for _, k := range []string{"rx_prio3_pause", "tx_prio3_bytes", "rx_pause_ctrl_phy", "rx_prio7_pause_duration"} {
		if _, ok := cnt.Ports[0].Counters[k]; !ok {
			t.Errorf("ethtool counter %s missing", k)
		}
	}
	for _, k := range []string{"np_cnp_sent", "rp_cnp_handled", "out_of_sequence", "rdma_tx_packets"} {
		if _, ok := cnt.HWCounters[k]; !ok {
			t.Errorf("hw counter %s missing", k)
		}
	}
	// The hw_counters map is complete (the IB-only ones too); the text
	// is what `rdma statistic show link emu_eth0/1` prints for this RoCE
	// port.
	if _, ok := cnt.HWCounters["ib_fc_rx"]; !ok {
		t.Errorf("hw_counters lacks the IB-only ib_fc_rx: %v", cnt.HWCounters)
	}
	if !strings.HasPrefix(cnt.Ethtool, "NIC statistics:\n") || !strings.HasPrefix(cnt.RDMA, "link emu_eth0/1 rx_write_requests 0 ") ||
		!strings.Contains(cnt.RDMA, " np_cnp_sent ") || strings.Contains(cnt.RDMA, " ib_fc_rx ") {
		t.Errorf("text layouts: %q / %q", cnt.Ethtool[:min(40, len(cnt.Ethtool))], cnt.RDMA[:min(40, len(cnt.RDMA))])
	}
	if _, ok := cnt.Transport["link_tx_frames"]; !ok {
		t.Errorf("transport counters %v", cnt.Transport)
	}
	q, err := c.MlnxQos()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(q, "Priority trust state: dscp") || !strings.Contains(q, "enabled     0   0   0   1   0   0   0   0") {
		t.Errorf("mlnx_qos:\n%s", q)
	}
	// A PFC frame from the peer is honoured and counted: prove the counters are live.
	var times [8]uint16
	times[3] = 100
	if err := d[1].Do(func() { d[1].NIC().SendPFC(1<<3, &times) }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "rx_prio3_pause", func() bool {
		r, err := c.Counters()
		return err == nil && r.Ports[0].Counters["rx_prio3_pause"] == 1 && r.Ports[0].Counters["rx_pause_ctrl_phy"] == 1
	})
}

// waitFor polls ok until it holds. The bound is generous: a loaded CI
// machine may stall a daemon for seconds; a passing run never waits it.
func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// rawCall sends one line (with an optional descriptor) and reads one
// response, for requests the Client would not make.
func rawCall(t *testing.T, c *net.UnixConn, r *bufio.Reader, line string, fd int) Response {
	t.Helper()
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	if _, _, err := c.WriteMsgUnix([]byte(line+"\n"), oob, nil); err != nil {
		t.Fatal(err)
	}
	b, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var resp Response
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	return resp
}

func TestControlErrors(t *testing.T) {
	_, ctl := pairOfDaemons(t, testLab(t, ""))
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: ctl[0], Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	unsealed, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(unsealed)
	unix.Ftruncate(unsealed, 4096)
	notMemfd, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer notMemfd.Close()
	for _, tc := range []struct {
		line string
		fd   int
		want string
	}{
		{`{"op":"nope"}`, -1, `unknown op "nope"`},
		{`{}`, -1, `without "op"`},
		{`{"op":"status"`, -1, "bad request"},
		{`{"op":"status","bogus":1}`, -1, "unknown field"},
		{`{"op":"reg_mr","length":4096,"access":1}`, -1, "no memfd"},
		{`{"op":"reg_mr","length":4096,"access":1}`, unsealed, "F_SEAL_SHRINK"},
		{`{"op":"reg_mr","length":4096,"access":1}`, int(notMemfd.Fd()), "not a memfd"},
		{`{"op":"post_send","qp":9,"wr":{"wr_id":1,"opcode":0,"sg":[]}}`, -1, "no QP 9"},
		{`{"op":"poll_cq","cq":3}`, -1, "no CQ 3"},
		{`{"op":"post_send","qp":1,"wr":{"wr_id":1,"opcode":5,"sg":[]}}`, -1, "IBV_WR_ATOMIC_CMP_AND_SWP"},
		{`{"op":"create_qp","qp_type":"ud","send_cq":1,"recv_cq":1}`, -1, "rc or uc"},
		{`{"op":"create_qp","send_cq":1,"recv_cq":1}`, -1, "no such CQ"},
		{`{"op":"connect","qp":1,"remote":{"qpn":2,"psn":0,"gid":"bad","mac":"02:00:00:00:00:02"}}`, -1, "remote gid"},
		{`{"op":"dereg_mr","mr":5}`, -1, "no region 5"},
		{`{"op":"create_cq","cqe":-1}`, -1, "1 or more entries"},
		{`{"op":"status"}{"op":"status"}`, -1, "one request per line"},
	} {
		resp := rawCall(t, c, r, tc.line, tc.fd)
		if resp.OK || !strings.Contains(resp.Error, tc.want) {
			t.Errorf("%s: %+v, want error %q", tc.line, resp, tc.want)
		}
	}
	// The connection survives bad requests.
	if resp := rawCall(t, c, r, `{"op":"status"}`, -1); !resp.OK || resp.Status == nil {
		t.Errorf("status after errors: %+v", resp)
	}
}

func fill(b []byte, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := 0; i+8 <= len(b); i += 8 {
		v := rng.Uint64()
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
}

// oneOp posts one signaled work request on the pair and waits for its
// completion.
func oneOp(t *testing.T, p *Pair, wr *WorkRequest) WC {
	t.Helper()
	if _, err := p.A.PostSend(p.AQP.Handle, wr, 1); err != nil {
		t.Fatal(err)
	}
	wcs, err := p.A.PollCQ(p.ACQ, 1, 1, 10*time.Second)
	if err != nil || len(wcs) != 1 {
		t.Fatalf("%v: completions %+v, %v", wr.Opcode, wcs, err)
	}
	return wcs[0]
}

// TestEngineOverControlSocket: a client registers a memfd on each daemon,
// connects an RC QP pair across the link and moves 1 MiB by RDMA WRITE,
// READ and SEND; the destination memory, written by the daemons through
// their mappings, is checked byte for byte in the client's own mapping.
func TestEngineOverControlSocket(t *testing.T) {
	_, ctl := pairOfDaemons(t, testLab(t, ""))
	a, b := dial(t, ctl[0]), dial(t, ctl[1])
	const size = 1 << 20
	p, err := NewPair(a, b, PairConfig{BufSize: size, Depth: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.AQP.GID != "::ffff:10.0.0.1" || p.BQP.MAC != "02:00:00:00:00:02" || p.AQP.MTU != 4096 {
		t.Errorf("qp info %+v %+v", p.AQP, p.BQP)
	}
	sg := []SGE{{Addr: p.AMR.Addr, Length: size, LKey: p.AMR.LKey}}

	fill(p.ABuf.Bytes, 1)
	wc := oneOp(t, p, &WorkRequest{WRID: 7, Opcode: nic.IBV_WR_RDMA_WRITE, Signaled: true, SG: sg, RemoteAddr: p.BMR.Addr, RKey: p.BMR.RKey})
	if wc.Status != nic.IBV_WC_SUCCESS || wc.Opcode != nic.IBV_WC_RDMA_WRITE || wc.WRID != 7 {
		t.Fatalf("write completion %+v", wc)
	}
	if !bytes.Equal(p.ABuf.Bytes, p.BBuf.Bytes) {
		t.Fatal("RDMA WRITE: destination memory differs")
	}

	fill(p.BBuf.Bytes, 2)
	wc = oneOp(t, p, &WorkRequest{WRID: 8, Opcode: nic.IBV_WR_RDMA_READ, Signaled: true, SG: sg, RemoteAddr: p.BMR.Addr, RKey: p.BMR.RKey})
	if wc.Status != nic.IBV_WC_SUCCESS || wc.Opcode != nic.IBV_WC_RDMA_READ || wc.ByteLen != size {
		t.Fatalf("read completion %+v", wc)
	}
	if !bytes.Equal(p.ABuf.Bytes, p.BBuf.Bytes) {
		t.Fatal("RDMA READ: destination memory differs")
	}

	fill(p.ABuf.Bytes, 3)
	if _, err := b.PostRecv(p.BQP.Handle, &WorkRequest{WRID: 99, SG: []SGE{{Addr: p.BMR.Addr, Length: size, LKey: p.BMR.LKey}}}, 1); err != nil {
		t.Fatal(err)
	}
	wc = oneOp(t, p, &WorkRequest{WRID: 9, Opcode: nic.IBV_WR_SEND, Signaled: true, SG: sg})
	if wc.Status != nic.IBV_WC_SUCCESS || wc.Opcode != nic.IBV_WC_SEND {
		t.Fatalf("send completion %+v", wc)
	}
	rwc, err := b.PollCQ(p.BCQ, 4, 1, 10*time.Second)
	if err != nil || len(rwc) != 1 || rwc[0].WRID != 99 || rwc[0].Opcode != nic.IBV_WC_RECV || rwc[0].ByteLen != size {
		t.Fatalf("receive completion %+v %v", rwc, err)
	}
	if !bytes.Equal(p.ABuf.Bytes, p.BBuf.Bytes) {
		t.Fatal("SEND: destination memory differs")
	}

	// A bad rkey is the remote's business: the completion says so.
	wc = oneOp(t, p, &WorkRequest{WRID: 10, Opcode: nic.IBV_WR_RDMA_WRITE, Signaled: true, SG: sg, RemoteAddr: p.BMR.Addr, RKey: p.BMR.RKey ^ 0x100})
	if wc.Status != nic.IBV_WC_REM_ACCESS_ERR {
		t.Errorf("write with a bad rkey: %+v", wc)
	}

	ca, err := a.Counters()
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.Counters()
	if err != nil {
		t.Fatal(err)
	}
	// WRITE and SEND: 2 x 256 frames of 4 KiB from A; READ: 256 responses from B.
	frames := uint64(2 * size / 4096)
	if ca.HWCounters["rdma_tx_packets"] < frames || cb.HWCounters["rdma_rx_packets"] < frames ||
		cb.HWCounters["rdma_tx_packets"] < frames/2 || ca.HWCounters["rdma_rx_packets"] < frames/2 ||
		cb.HWCounters["rx_write_requests"] == 0 || cb.HWCounters["rx_read_requests"] == 0 ||
		cb.HWCounters["resp_remote_access_errors"] != 1 || ca.HWCounters["req_remote_access_errors"] != 1 {
		t.Errorf("counters a %v\nb %v", ca.HWCounters, cb.HWCounters)
	}
	if ca.Ports[0].Counters["tx_prio3_packets"] < frames {
		t.Errorf("tx_prio3_packets %d, want >= %d (RoCE DSCP 26 is priority 3)", ca.Ports[0].Counters["tx_prio3_packets"], frames)
	}
}

// TestPerfRun runs the perftest-style loop for each operation and checks
// the session is released when the client goes.
func TestPerfRun(t *testing.T) {
	_, ctl := pairOfDaemons(t, testLab(t, ""))
	a, b := dial(t, ctl[0]), dial(t, ctl[1])
	p, err := NewPair(a, b, PairConfig{BufSize: 1 << 16, Depth: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []nic.WROpcode{nic.IBV_WR_RDMA_WRITE, nic.IBV_WR_RDMA_READ, nic.IBV_WR_SEND} {
		r, err := p.Run(op, 1<<16, 40)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		if r.Messages != 40 || r.Bytes != 40<<16 || r.Gbps() <= 0 {
			t.Errorf("%v: %+v", op, r)
		}
		t.Logf("%v 64 KiB x 40: %.2f Gb/s", op, r.Gbps())
	}
	for _, op := range []nic.WROpcode{nic.IBV_WR_RDMA_WRITE, nic.IBV_WR_RDMA_READ, nic.IBV_WR_SEND} {
		r, err := p.Latency(op, 64, 20)
		if err != nil {
			t.Fatalf("%v latency: %v", op, err)
		}
		if len(r.Samples) != 20 || r.Percentile(50) <= 0 || r.Percentile(99) < r.Percentile(50) || r.Percentile(0) > r.Percentile(50) {
			t.Errorf("%v latency: %+v", op, r)
		}
		t.Logf("%v 64 B latency through the control socket: median %v, 99%% %v", op, r.Percentile(50), r.Percentile(99))
	}
	if st, _ := b.Status(); st.Sessions != 1 || st.QPs != 1 {
		t.Errorf("status before close: %+v", st)
	}
	p.Close()
	a.Close()
	c := dial(t, ctl[0])
	waitFor(t, "session release", func() bool {
		st, err := c.Status()
		return err == nil && st.QPs == 0 && st.Sessions == 0
	})
}

func TestWriteMetrics(t *testing.T) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	lag := rt.Lag{Max: 342 * clock.Millisecond, Late: 37, Dropped: 2}
	WriteMetrics(w, MetricsInfo{Lab: "lab1", Node: "h1", Port: "eth0", Up: true, Dilation: 1, Lag: lag}, &Response{
		Ports: []PortCounters{{Port: "eth0", Counters: map[string]uint64{
			"rx_prio3_pause": 4, "rx_prio3_pause_duration": 2500000, "rx_prio3_pause_transition": 7,
			"rx_bytes_phy": 9, "rx_icrc_errors": 3, "rx_global_pause_duration": 1000,
			"loop_lag_max_ns": 342e6, "loop_late": 37, "loop_lag_dropped": 2,
			"link_tx_backlog_max": 500000, "link_tx_backlog_holds": 11,
		}}},
		HWCounters: map[string]uint64{"np_cnp_sent": 2, "rdma_rx_bytes": 8, "packet_seq_err": 1},
		Transport: map[string]uint64{"tap_gso_frames": 5, "link_rx_frames": 6, "loop_lag_max_ns": 342e6, "loop_late": 37, "loop_lag_dropped": 2,
			"link_tx_backlog_max": 500000, "link_tx_backlog_holds": 11},
	})
	w.Flush()
	out := b.String()
	for _, want := range []string{
		// The switch's families, so one query covers both ends of a link.
		"# TYPE emu_pfc_pause_frames_received_total counter\n",
		`emu_pfc_pause_frames_received_total{lab="lab1",node="h1",port="eth0",priority="3"} 4`,
		`emu_pfc_pause_received_seconds_total{lab="lab1",node="h1",port="eth0",priority="3"} 2.5`,
		`emu_port_received_bytes_total{lab="lab1",node="h1",port="eth0"} 9`,
		`emu_cnp_sent_total{lab="lab1",node="h1",port="eth0"} 2`,
		// The rest, node_exporter-style.
		`emu_nic_received_pause_transition_total{lab="lab1",node="h1",port="eth0",priority="3"} 7`,
		"# HELP emu_nic_received_pause_transition_total The NIC's ethtool -S counter rx_prio<N>_pause_transition, by priority.\n",
		`emu_nic_received_icrc_errors_total{lab="lab1",node="h1",port="eth0"} 3`,
		`emu_nic_received_global_pause_seconds_total{lab="lab1",node="h1",port="eth0"} 0.001`,
		`emu_nic_rdma_received_bytes_total{lab="lab1",node="h1",port="eth0"} 8`,
		`emu_nic_rdma_packet_seq_err_total{lab="lab1",node="h1",port="eth0"} 1`,
		`emu_nic_transport_tap_gso_frames_total{lab="lab1",node="h1",port="eth0"} 5`,
		`emu_nic_transport_link_received_frames_total{lab="lab1",node="h1",port="eth0"} 6`,
		`emu_port_up{lab="lab1",node="h1",port="eth0"} 1`,
		`emu_build_info{lab="lab1",node="h1",daemon="emunic",goversion="`,
		`emu_time_dilation{lab="lab1",node="h1"} 1`,
		// How late the loop ran: the daemon's, in emuswitch's families.
		"# TYPE emu_loop_lag_max_seconds gauge\n",
		`emu_loop_lag_max_seconds{lab="lab1",node="h1"} 0.342` + "\n",
		`emu_loop_late_total{lab="lab1",node="h1"} 37` + "\n",
		`emu_loop_lag_dropped_total{lab="lab1",node="h1"} 2` + "\n",
		// The transmit hold's: a high-water mark in bytes is a gauge.
		"# TYPE emu_nic_link_transmitted_backlog_max_bytes gauge\n",
		`emu_nic_link_transmitted_backlog_max_bytes{lab="lab1",node="h1",port="eth0"} 500000` + "\n",
		`emu_nic_link_transmitted_backlog_holds_total{lab="lab1",node="h1",port="eth0"} 11` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %q:\n%s", want, out)
		}
	}
	// Not also as a port's counters (a maximum in ns is not a counter).
	if strings.Contains(out, "emu_nic_loop") || strings.Contains(out, "emu_nic_transport_loop") {
		t.Errorf("the loop's lag exported as a port counter:\n%s", out)
	}
	// Once, not also as the transport's, and the maximum not as a counter.
	for _, dup := range []string{"emu_nic_transport_link_transmitted_backlog", "emu_nic_link_transmitted_backlog_max_total"} {
		if strings.Contains(out, dup) {
			t.Errorf("the transmit hold's counters exported as %s...:\n%s", dup, out)
		}
	}
	// Every family has HELP and TYPE; every counter ends in _total.
	for _, l := range strings.Split(out, "\n") {
		if f, ok := strings.CutPrefix(l, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			if typ == "counter" && !strings.HasSuffix(name, "_total") {
				t.Errorf("counter %s does not end in _total", name)
			}
			if !strings.Contains(out, "# HELP "+name+" ") {
				t.Errorf("%s has no HELP", name)
			}
		}
	}
}

// TestWriteMetricsIB: an IB port's per-VL counters go to the IB switch's
// families with a vl label, and it has no priority or PFC family.
func TestWriteMetricsIB(t *testing.T) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	WriteMetrics(w, MetricsInfo{Lab: "lab1", Node: "h1", Port: "ib0", Up: true, Dilation: 1}, &Response{
		Ports: []PortCounters{{Port: "ib0", Counters: map[string]uint64{"rx_packets_phy": 9, "vl0_rx_packets": 4, "vl1_tx_bytes": 300}}},
	})
	w.Flush()
	out := b.String()
	for _, want := range []string{
		`emu_vl_received_packets_total{lab="lab1",node="h1",port="ib0",vl="0"} 4`,
		`emu_vl_transmitted_bytes_total{lab="lab1",node="h1",port="ib0",vl="1"} 300`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "priority=") || strings.Contains(out, "emu_nic_vl") {
		t.Errorf("IB metrics with priorities or per-VL names:\n%s", out)
	}
}

// BenchmarkWriteBW is `perf write_bw -s 65536` between two daemons in
// this process over a seqpacket socketpair (no TAPs): 64 KiB RDMA WRITEs
// at a 4096-byte MTU, 128 in flight (perftest's default tx-depth),
// through the control socket.
func BenchmarkWriteBW(b *testing.B) {
	_, ctl := pairOfDaemons(b, testLab(b, ""))
	ca, cb := dial(b, ctl[0]), dial(b, ctl[1])
	p, err := NewPair(ca, cb, PairConfig{BufSize: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	b.ReportAllocs()
	var bytes uint64
	var el time.Duration
	for b.Loop() {
		r, err := p.Run(nic.IBV_WR_RDMA_WRITE, 1<<16, 2000)
		if err != nil {
			b.Fatal(err)
		}
		bytes += r.Bytes
		el += r.Elapsed
	}
	b.ReportMetric(float64(bytes)*8/el.Seconds()/1e9, "Gb/s")
}

// TestStormAndMetrics: a node with pfc_storm keeps its peer paused on the
// priority (real PFC frames on the link), and the metrics endpoint shows
// it with the priority label.
func TestStormAndMetrics(t *testing.T) {
	spec := testLab(t, "")
	spec.Node("h1").Storm = &lab.PFCStorm{Priority: 3, Interval: 200 * clock.Microsecond}
	a, b, err := rt.SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	d1, err := Start(Options{Spec: spec, Node: "h1", Link: a})
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Close()
	d2, err := Start(Options{Spec: spec, Node: "h2", Link: b, Metrics: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	var body string
	waitFor(t, "storm in the metrics", func() bool {
		resp, err := http.Get("http://" + d2.MetricsAddr() + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		bb, _ := io.ReadAll(resp.Body)
		body = string(bb)
		var n uint64
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, `emu_pfc_pause_frames_received_total{lab="b2b",node="h2",port="eth0",priority="3"} `) {
				fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &n)
			}
		}
		return n >= 3
	})
	if !strings.Contains(body, "\nemu_time_dilation{lab=\"b2b\",node=\"h2\"} 1\n") {
		t.Errorf("no time dilation gauge in the metrics:\n%s", body)
	}
	// Priority 3 was paused (PFC is honoured on 3 by default) for a
	// measurable time; priority 0 never.
	var dur3, dur0 time.Duration
	d2.Do(func() {
		dur3 = time.Duration(d2.NIC().PauseDuration(3) / clock.Nanosecond)
		dur0 = time.Duration(d2.NIC().PauseDuration(0) / clock.Nanosecond)
	})
	if dur3 <= 0 || dur0 != 0 {
		t.Errorf("pause duration: priority 3 %v, priority 0 %v", dur3, dur0)
	}
}

// TestCloseWithWaitingPoll: Close does not wait for a poll_cq that is
// waiting for completions that will never come.
func TestCloseWithWaitingPoll(t *testing.T) {
	d, ctl := pairOfDaemons(t, testLab(t, ""))
	c := dial(t, ctl[0])
	cq, err := c.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.PollCQ(cq, 1, 1, time.Minute)
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the poll start waiting
	closed := make(chan struct{})
	go func() { d[0].Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for a waiting poll_cq")
	}
	if err := <-errc; err == nil {
		t.Error("the waiting poll_cq got no error from a closed daemon")
	}
	if _, err := os.Stat(ctl[0]); !os.IsNotExist(err) {
		t.Errorf("control socket left: %v", err)
	}
}

// TestCapture: a capture client gets a pcapng stream of the link port
// with the frames of an RDMA WRITE, real RoCEv2 bytes with direction
// comments, and the daemon forgets the client when it closes.
func TestCapture(t *testing.T) {
	d, ctl := pairOfDaemons(t, testLab(t, ""))
	cc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: ctl[0], Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	br := bufio.NewReader(cc)
	if _, err := cc.Write([]byte(`{"op":"capture"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	line, err := br.ReadBytes('\n')
	if err != nil || !strings.Contains(string(line), `"ok":true`) {
		t.Fatalf("capture answer %q %v", line, err)
	}
	r, err := capture.Open(br)
	if err != nil {
		t.Fatal(err)
	}
	var subs int
	waitFor(t, "capture subscriber", func() bool {
		d[0].Do(func() { subs = len(d[0].caps) })
		return subs == 1
	})
	a, b := dial(t, ctl[0]), dial(t, ctl[1])
	p, err := NewPair(a, b, PairConfig{BufSize: 1 << 16, Depth: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Run(nic.IBV_WR_RDMA_WRITE, 1<<16, 2); err != nil {
		t.Fatal(err)
	}
	var tx, rx int
	var rec capture.Record
	for tx < 32 || rx == 0 {
		if err := r.Next(&rec); err != nil {
			t.Fatalf("after %d tx, %d rx: %v", tx, rx, err)
		}
		var pkt bth.Packet
		if err := pkt.Decode(rec.Data, bth.VerifyICRC); err != nil {
			t.Fatalf("captured frame does not decode: %v", err)
		}
		switch {
		case strings.HasPrefix(rec.Comment, "tx prio 3"):
			tx++
		case rec.Comment == "rx":
			rx++
		default:
			t.Fatalf("comment %q", rec.Comment)
		}
	}
	cc.Close()
	waitFor(t, "capture subscriber gone", func() bool {
		d[0].Do(func() { subs = len(d[0].caps) })
		return subs == 0
	})
}

// TestLinkOp: the link op pulls the NIC's cable (nothing is received,
// nothing sent) and plugs it back, and sets the NIC's rate; bad values are
// refused with the field named (the wire's changes: TestNICWire).
func TestLinkOp(t *testing.T) {
	d, ctl := pairOfDaemons(t, testLab(t, ""))
	c := dial(t, ctl[1])
	for _, bad := range []struct {
		req  Request
		want string
	}{
		{Request{Op: "link", State: "sideways"}, "want up or down"},
		{Request{Op: "link", Delay: "-1ms"}, `link: delay "-1ms": must not be negative`},
		{Request{Op: "link", Delay: "soon"}, `link: delay "soon"`},
		{Request{Op: "link", Loss: ptr(2.0)}, "link: loss 2: a probability in [0, 1]"},
		{Request{Op: "link", Corrupt: ptr(-0.5)}, "link: corrupt -0.5: a probability in [0, 1]"},
		{Request{Op: "link", Rate: "10X"}, `link: rate "10X"`},
		{Request{Op: "link", Rate: "0"}, `link: rate "0": must be greater than zero`},
		{Request{Op: "link", State: "down", Port: "p9"}, `port "p9"`},
		{Request{Op: "link"}, `state "": want up or down`},
		{Request{Op: "link", Schedule: []lab.ScheduleStep{{After: "1ms", State: "down"}, {After: "1ms", State: "up"}}}, `schedule[1].after "1ms": not after`},
	} {
		if _, err := c.Call(&bad.req, -1); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.req, err, bad.want)
		}
	}
	if _, err := c.Call(&Request{Op: "link", Rate: "10G"}, -1); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Status(); err != nil || st.RateBps != 10e9 || st.AdminDown {
		t.Errorf("status after rate 10G: %+v %v", st, err)
	}
	var rate uint64
	d[1].Do(func() { rate = d[1].NIC().Config().Rate })
	if rate != 10e9 {
		t.Errorf("the NIC's rate after the link op: %d", rate)
	}
	if r, err := c.Counters(); err != nil || r.Ports[0].Counters["link_down_events_phy"] != 0 {
		t.Errorf("link_down_events_phy before any link went down: %v %v", r.Ports[0].Counters["link_down_events_phy"], err)
	}
	if _, err := c.Call(&Request{Op: "link", State: "down", Port: "eth0"}, -1); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Status(); err != nil || !st.AdminDown {
		t.Errorf("status after down: %+v %v", st, err)
	}
	if r, err := c.Counters(); err != nil || r.Ports[0].Counters["link_down_events_phy"] != 1 {
		t.Errorf("link_down_events_phy after the link went down once: %v %v", r.Ports[0].Counters["link_down_events_phy"], err)
	}
	var times [8]uint16
	times[3] = 10
	pfc := func() { d[0].Do(func() { d[0].NIC().SendPFC(1<<3, &times) }) }
	pfc()
	waitFor(t, "frame dropped at the pulled cable", func() bool {
		r, err := c.Counters()
		return err == nil && r.Transport["link_rx_admin_down"] == 1 && r.Ports[0].Counters["rx_pause_ctrl_phy"] == 0
	})
	if _, err := c.Call(&Request{Op: "link", State: "up"}, -1); err != nil {
		t.Fatal(err)
	}
	pfc()
	waitFor(t, "frame received after plugging", func() bool {
		r, err := c.Counters()
		return err == nil && r.Ports[0].Counters["rx_pause_ctrl_phy"] == 1
	})
}

// TestLinkSchedule: the link op's schedule pulls the cable and plugs it
// back at its steps' times; an empty one cancels what is pending.
func TestLinkSchedule(t *testing.T) {
	_, ctl := pairOfDaemons(t, testLab(t, ""))
	c := dial(t, ctl[1])
	// The down lasts 2 s: polled status must see it, and a stalled test
	// would miss a shorter one and wait for a down that already passed.
	if _, err := c.Call(&Request{Op: "link", Schedule: []lab.ScheduleStep{{After: "0", State: "down"}, {After: "2s", State: "up"}}}, -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the scheduled down", func() bool { st, err := c.Status(); return err == nil && st.AdminDown })
	waitFor(t, "the scheduled up", func() bool {
		st, err := c.Status()
		return err == nil && !st.AdminDown && st.SchedulePending == 0
	})
	if _, err := c.Call(&Request{Op: "link", Schedule: []lab.ScheduleStep{{After: "100s", State: "down"}}}, -1); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Status(); err != nil || st.SchedulePending != 1 {
		t.Fatalf("status with a step pending: %+v %v", st, err)
	}
	if _, err := c.Call(&Request{Op: "link", Schedule: []lab.ScheduleStep{}}, -1); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Status(); err != nil || st.SchedulePending != 0 || st.AdminDown {
		t.Fatalf("status after cancelling: %+v %v", st, err)
	}
	// A state set by hand takes the link over: the pending steps go.
	if _, err := c.Call(&Request{Op: "link", Schedule: []lab.ScheduleStep{{After: "100s", State: "up"}}}, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(&Request{Op: "link", State: "down"}, -1); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Status(); err != nil || st.SchedulePending != 0 || !st.AdminDown {
		t.Fatalf("status after a down by hand: %+v %v", st, err)
	}
}

// TestUDPLink: two daemons on a udp: link (the transport between
// machines) move an RDMA WRITE intact; when one goes away the other shows
// its link down for the silence (the keepalives stopped), and up again
// when a daemon answers on the same address.
func TestUDPLink(t *testing.T) {
	spec := testLab(t, "")
	ports := freeUDPPorts(t, 2)
	dir := t.TempDir()
	start := func(i int) *Daemon {
		node := []string{"h1", "h2"}[i]
		uri := fmt.Sprintf("udp:127.0.0.1:%d,127.0.0.1:%d", ports[i], ports[1-i])
		d, err := Start(Options{Spec: spec, Node: node, Port: uri, Control: filepath.Join(dir, node+".sock")})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	da := start(0)
	defer da.Close()
	a := dial(t, filepath.Join(dir, "h1.sock"))
	linkIs := func(want string) {
		t.Helper()
		var st *Status
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if st, err = a.Status(); err == nil && st.Link == want {
				return
			}
		}
		t.Fatalf("h1's link: %+v %v; want %q", st, err, want)
	}
	// Nobody answers yet: the keepalives go unheard.
	linkIs("down (peer silent)")
	db := start(1)
	linkIs(LinkUp)
	b := dial(t, filepath.Join(dir, "h2.sock"))
	if st, err := a.Status(); err != nil || !strings.HasPrefix(st.Transport, "udp:127.0.0.1:") {
		t.Fatalf("status %+v %v", st, err)
	}
	p, err := NewPair(a, b, PairConfig{BufSize: 1 << 18, Depth: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	fill(p.ABuf.Bytes, 5)
	wc := oneOp(t, p, &WorkRequest{Opcode: nic.IBV_WR_RDMA_WRITE, Signaled: true,
		SG: []SGE{{Addr: p.AMR.Addr, Length: 1 << 18, LKey: p.AMR.LKey}}, RemoteAddr: p.BMR.Addr, RKey: p.BMR.RKey})
	if wc.Status != nic.IBV_WC_SUCCESS || !bytes.Equal(p.ABuf.Bytes, p.BBuf.Bytes) {
		t.Fatalf("write over udp: %+v, memory equal %v", wc, bytes.Equal(p.ABuf.Bytes, p.BBuf.Bytes))
	}
	p.Close()
	b.Close()
	db.Close()
	linkIs("down (peer silent)")
	db = start(1)
	defer db.Close()
	linkIs(LinkUp)
}

// TestStartErrors: a failed start names the flag and leaves nothing
// behind (the listening socket file it had created is removed).
func TestStartErrors(t *testing.T) {
	spec := testLab(t, "")
	dir := t.TempDir()
	ctl := filepath.Join(dir, "ctl.sock")
	if err := os.WriteFile(ctl, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.sock")
	_, err := Start(Options{Spec: spec, Node: "h1", Port: "seqpacket-listen:" + link, Control: ctl})
	if err == nil || !strings.Contains(err.Error(), "--control") {
		t.Fatalf("existing control path: %v", err)
	}
	if _, err := os.Stat(link); !os.IsNotExist(err) {
		t.Errorf("listening socket left after a failed start: %v", err)
	}
	_, err = Start(Options{Spec: spec, Node: "h1", Port: "seqpacket-dial:" + filepath.Join(dir, "nobody.sock"), DialTimeout: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "--port seqpacket-dial:") {
		t.Errorf("dial to nobody: %v", err)
	}
	_, err = Start(Options{Spec: spec, Node: "h1", Port: "udp:127.0.0.1:0,127.0.0.1:9", Metrics: "256.0.0.1:1"})
	if err == nil || !strings.Contains(err.Error(), "--metrics") {
		t.Errorf("bad metrics address: %v", err)
	}
}

// TestReconnect: when the peer daemon goes away and comes back (a
// restarted emunic), the listening side listens again and the dialling
// side redials, and RDMA works over the new connection.
func TestReconnect(t *testing.T) {
	spec := testLab(t, "")
	dir := t.TempDir()
	link := filepath.Join(dir, "link.sock")
	var logMu sync.Mutex
	var logBuf bytes.Buffer
	start := func(node, uri string) *Daemon {
		t.Helper()
		lw := log.New(lockedWriter{&logMu, &logBuf}, node+": ", 0)
		d, err := Start(Options{Spec: spec, Node: node, Port: uri + link, Control: filepath.Join(dir, node+".sock"), Log: lw})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	state := func(node string) string {
		c, err := Dial(filepath.Join(dir, node+".sock"))
		if err != nil {
			return err.Error()
		}
		defer c.Close()
		st, err := c.Status()
		if err != nil {
			return err.Error()
		}
		return st.Link
	}
	write := func() {
		t.Helper()
		a, b := dial(t, filepath.Join(dir, "h1.sock")), dial(t, filepath.Join(dir, "h2.sock"))
		p, err := NewPair(a, b, PairConfig{BufSize: 1 << 16, Depth: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		fill(p.ABuf.Bytes, 9)
		wc := oneOp(t, p, &WorkRequest{Opcode: nic.IBV_WR_RDMA_WRITE, Signaled: true,
			SG: []SGE{{Addr: p.AMR.Addr, Length: 1 << 16, LKey: p.AMR.LKey}}, RemoteAddr: p.BMR.Addr, RKey: p.BMR.RKey})
		if wc.Status != nic.IBV_WC_SUCCESS || !bytes.Equal(p.ABuf.Bytes, p.BBuf.Bytes) {
			t.Fatalf("write: %+v", wc)
		}
	}
	// linkCounters are a node's link transport counters, which go on across
	// re-accepts and redials (each connection is a new rt.Port).
	linkCounters := func(node string) map[string]uint64 {
		t.Helper()
		r, err := dial(t, filepath.Join(dir, node+".sock")).Counters()
		if err != nil {
			t.Fatal(err)
		}
		return r.Transport
	}
	notBack := func(node string, before, now map[string]uint64) {
		t.Helper()
		for _, k := range []string{"link_rx_frames", "link_rx_bytes", "link_tx_frames", "link_tx_bytes"} {
			if now[k] < before[k] || before[k] == 0 {
				t.Errorf("%s %s: %d before the new connection, %d after", node, k, before[k], now[k])
			}
		}
	}
	h1 := start("h1", "seqpacket-listen:")
	defer h1.Close()
	h2 := start("h2", "seqpacket-dial:")
	waitFor(t, "h1 up", func() bool { return state("h1") == LinkUp })
	write()

	// The dialler goes: the listener listens again; a new dialler connects.
	before := linkCounters("h1")
	h2.Close()
	waitFor(t, "h1 waiting", func() bool { return state("h1") == LinkWaiting })
	h2 = start("h2", "seqpacket-dial:")
	waitFor(t, "h1 up again", func() bool { return state("h1") == LinkUp && state("h2") == LinkUp })
	notBack("h1", before, linkCounters("h1"))
	write()

	// The listener goes: the dialler redials until a new listener is there.
	before = linkCounters("h2")
	h1.Close()
	waitFor(t, "h2 down", func() bool { return state("h2") == LinkDown })
	h1 = start("h1", "seqpacket-listen:")
	defer h1.Close()
	waitFor(t, "h2 up again", func() bool { return state("h1") == LinkUp && state("h2") == LinkUp })
	notBack("h2", before, linkCounters("h2"))
	write()
	if now := linkCounters("h2"); now["link_rx_frames"] <= before["link_rx_frames"] {
		t.Errorf("h2 link_rx_frames: %d before the redial, %d after a write over the new link", before["link_rx_frames"], now["link_rx_frames"])
	}
	h2.Close()
	// Each side logged its link's return, not only its loss.
	logMu.Lock()
	defer logMu.Unlock()
	for _, want := range []string{"h1: port eth0: peer connected again on seqpacket-listen:", "h2: port eth0: peer connected again on seqpacket-dial:"} {
		if !strings.Contains(logBuf.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logBuf.String())
		}
	}
}

// lockedWriter serializes writes of daemons that log to one buffer.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestStaleSockets: socket files left by a daemon killed with SIGKILL are
// taken over by its successor; a live one is not.
func TestStaleSockets(t *testing.T) {
	dir := t.TempDir()
	ctl, link := filepath.Join(dir, "ctl.sock"), filepath.Join(dir, "link.sock")
	for _, s := range []struct{ network, path string }{{"unix", ctl}, {"unixpacket", link}} {
		ln, err := net.ListenUnix(s.network, &net.UnixAddr{Name: s.path, Net: s.network})
		if err != nil {
			t.Fatal(err)
		}
		ln.SetUnlinkOnClose(false) // as after kill -9
		ln.Close()
	}
	spec := testLab(t, "")
	d, err := Start(Options{Spec: spec, Node: "h1", Port: "seqpacket-listen:" + link, Control: ctl})
	if err != nil {
		t.Fatalf("start over stale sockets: %v", err)
	}
	defer d.Close()
	_, err = Start(Options{Spec: spec, Node: "h2", Port: "udp:127.0.0.1:0,127.0.0.1:9", Control: ctl})
	if err == nil || !strings.Contains(err.Error(), "live daemon") {
		t.Errorf("second daemon on a live control socket: %v", err)
	}
}

// TestDeregAndDestroy: a region goes only when no QP of the session is
// live (the engine may hold slices of it); afterwards its keys are dead.
func TestDeregAndDestroy(t *testing.T) {
	_, ctl := pairOfDaemons(t, testLab(t, ""))
	a, b := dial(t, ctl[0]), dial(t, ctl[1])
	p, err := NewPair(a, b, PairConfig{BufSize: 1 << 12, Depth: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := b.DeregMR(p.BMR.Handle); err == nil || !strings.Contains(err.Error(), "destroy the session's QPs first") {
		t.Errorf("dereg under a live QP: %v", err)
	}
	if err := b.DestroyQP(p.BQP.Handle); err != nil {
		t.Fatal(err)
	}
	if err := b.DeregMR(p.BMR.Handle); err != nil {
		t.Fatal(err)
	}
	if err := b.DeregMR(p.BMR.Handle); err == nil {
		t.Error("second dereg succeeded")
	}
	if _, err := b.PostRecv(p.BQP.Handle, &WorkRequest{}, 1); err == nil || !strings.Contains(err.Error(), "no QP") {
		t.Errorf("post_recv on a destroyed QP: %v", err)
	}
	if _, err := a.Call(&Request{Op: "capture", Ports: []string{"p3"}}, -1); err == nil || !strings.Contains(err.Error(), `port "p3"`) {
		t.Errorf("capture of a port the NIC does not have: %v", err)
	}
	if st, err := a.Status(); err != nil || st.Node != "h1" {
		t.Errorf("connection after a refused capture: %+v %v", st, err)
	}
}

func TestPercentile(t *testing.T) {
	r := LatencyResult{Samples: []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}}
	for p, want := range map[float64]time.Duration{0: 1, 10: 1, 50: 5, 90: 9, 99: 10, 100: 10} {
		if got := r.Percentile(p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if (LatencyResult{}).Percentile(50) != 0 {
		t.Error("percentile of nothing")
	}
	if r.Samples[0] != 5 {
		t.Error("Percentile reordered the samples")
	}
}

// freeUDPPorts returns n UDP ports of 127.0.0.1 that the kernel just gave
// out as free (fixed numbers could meet another process's ephemeral port).
func freeUDPPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var conns []net.PacketConn
	for range n {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		ports = append(ports, c.LocalAddr().(*net.UDPAddr).Port)
	}
	for _, c := range conns {
		c.Close()
	}
	return ports
}
