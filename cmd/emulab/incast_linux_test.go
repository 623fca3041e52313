package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/nicd"
	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

// A 4:1 incast in real time (testdata/up/incast4.yaml): four emunics
// write to a fifth through one emuswitch at 1 Gb/s per link (200 Mb/s
// towards the fifth, see the lab file), on the
// lossless priority 3 (the NICs' RoCE DSCP 26; the switch maps DSCP 26 to
// TC 3 and PG 3, pfc_enable "3"). The test captures the switch's ingress
// ports through its control socket while the flows run and then proves
// the lossless behaviour three ways: the switch and NIC counters show
// XOFF sent, XOFF received and nothing dropped; the capture holds the
// switch's PFC frames, decoded with wire.DecodeMACControl, as many as
// its counters say it sent; and every flow's destination memory holds
// its source's bytes.
//
// With EMUFABRIC_KEEP_CAPTURE=DIR the capture is also written to
// DIR/incast4.pcap (classic pcap, Ethernet) for outside tools.

// incastFlowMessages per sender: 200 x 64 KiB is 52 MB in all, about 2.1 s
// at the bottleneck's 200 Mb/s.
const (
	incastFlowMessages = 200
	incastMessageSize  = 65536
	incastPriority     = 3
	// incastQPTimeout: the senders' local ACK timeout, 4.096 us x 2^22 =
	// 17 s (a loaded machine may stall the lab for seconds). The bottleneck queue holds what the four PGs buffer up to
	// XOFF plus what arrives after it (up to some 6 MB per PG, see the
	// lab file): tens of MB, about a second at 200 Mb/s, far beyond the
	// default 67 ms (2^14), after which a sender would retransmit
	// messages that are only queued.
	incastQPTimeout = 22
)

// swCapture is a capture running on a switch's control socket.
type swCapture struct {
	conn  net.Conn
	ports []string
	mu    sync.Mutex
	recs  []capture.Record
	done  chan error
}

// startSwitchCapture asks the switch to capture ports and reads the
// pcapng stream into memory until stop.
func startSwitchCapture(t *testing.T, control string, ports []string) *swCapture {
	t.Helper()
	c, err := net.Dial("unix", control)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(map[string]any{"op": "capture", "ports": ports})
	if _, err := c.Write(append(req, '\n')); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReaderSize(c, 1<<20)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := br.ReadBytes('\n')
	if err != nil {
		t.Fatalf("capture: %v", err)
	}
	var resp struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil || !resp.OK {
		t.Fatalf("capture: %s %v", line, err)
	}
	c.SetReadDeadline(time.Time{})
	sc := &swCapture{conn: c, ports: ports, done: make(chan error, 1)}
	go func() {
		r, err := capture.Open(br)
		if err != nil {
			sc.done <- err
			return
		}
		for {
			var rec capture.Record
			if err := r.Next(&rec); err != nil {
				sc.done <- err
				return
			}
			rec.Data = append([]byte(nil), rec.Data...)
			rec.Raw = nil
			sc.mu.Lock()
			sc.recs = append(sc.recs, rec)
			sc.mu.Unlock()
		}
	}()
	return sc
}

func (sc *swCapture) count() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.recs)
}

// quiesce waits until no record has arrived for quiet (the switch has
// written out what it queued), at most limit.
func (sc *swCapture) quiesce(quiet, limit time.Duration) {
	end := time.Now().Add(limit)
	last, since := sc.count(), time.Now()
	for time.Now().Before(end) {
		time.Sleep(20 * time.Millisecond)
		if n := sc.count(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= quiet {
			return
		}
	}
}

// stop ends the capture and returns its records. The reader must still
// be running: a stream that ended before (a malformed block, the switch
// closing it) fails the test. Closing our end mid-block then ends the
// reader with an error, which is expected.
func (sc *swCapture) stop(t *testing.T) []capture.Record {
	t.Helper()
	select {
	case err := <-sc.done:
		t.Errorf("the capture stream ended before the test stopped it: %v", err)
	default:
		sc.conn.Close()
		select {
		case <-sc.done:
		case <-time.After(5 * time.Second):
			t.Fatal("capture reader did not end")
		}
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.recs
}

// switchCounters reads every port's counters from an emuswitch.
func switchCounters(t *testing.T, control string) map[string]map[string]uint64 {
	t.Helper()
	var r struct {
		Ports []struct {
			Port     string            `json:"port"`
			Counters map[string]uint64 `json:"counters"`
		} `json:"ports"`
	}
	if err := lab.ControlRequest(control, map[string]string{"op": "counters"}, &r, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]uint64{}
	for _, p := range r.Ports {
		out[p.Port] = p.Counters
	}
	return out
}

// nicCounters reads an emunic's counters: the port's (ethtool names),
// the RDMA hw_counters and the transport's, in one map.
func nicCounters(t *testing.T, control string) map[string]uint64 {
	t.Helper()
	var r nicd.Response
	if err := lab.ControlRequest(control, map[string]string{"op": "counters"}, &r, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, p := range r.Ports {
		for k, v := range p.Counters {
			out[k] = v
		}
	}
	for k, v := range r.HWCounters {
		out["hw."+k] = v
	}
	for k, v := range r.Transport {
		out["transport."+k] = v
	}
	return out
}

// nicLossCounters are the emunic counters that count a frame or message
// lost, retransmitted or refused somewhere between two NICs: each must
// stay 0 in a lossless incast.
var nicLossCounters = []string{
	"hw.out_of_sequence", "hw.packet_seq_err", "hw.implied_nak_seq_err", "hw.local_ack_timeout_err",
	"hw.duplicate_request", "hw.roce_adp_retrans", "hw.tx_queue_dropped", "hw.out_of_buffer",
	"hw.rx_qp_state_drop", "hw.rx_icrc_errors", "hw.rx_malformed_roce", "hw.rnr_nak_retry_err",
	"hw.req_transport_retries_exceeded", "transport.link_tx_queue_drops", "transport.link_tx_errors",
	"transport.link_rx_too_large",
}

func TestIncastPFC(t *testing.T) {
	e := newUpEnv(t)
	l := e.lab(t, "testdata/up/incast4.yaml")
	socks := e.up(t, l, "nic")
	ctl := e.controls(t, l)
	senders := []string{"h1", "h2", "h3", "h4"}
	ingress := []string{"p1", "p2", "p3", "p4"} // the senders' switch ports, where XOFF goes out
	for _, h := range append(senders, "h5") {
		nh, err := lab.ResolveNIC(e.state, l.node(h))
		if err != nil || nh.Control != ctl[h] {
			t.Fatalf("ResolveNIC %s: %+v %v (status says %s)", h, nh, err, ctl[h])
		}
	}

	// The flows: one QP pair per sender, each with its own buffers (so
	// each flow's data lands in its own region of h5's memory).
	var conns []*perfConn
	defer func() {
		for _, c := range conns {
			c.close()
		}
	}()
	for _, h := range senders {
		cs, err := openPerfConns(ctl[h], ctl["h5"], 1, perfPairConfig{BufSize: incastMessageSize, Depth: perfDefTxBW, Timeout: incastQPTimeout})
		if err != nil {
			t.Fatalf("%s -> h5: %v", h, err)
		}
		conns = append(conns, cs...)
	}
	prepareBuffers(conns, nic.IBV_WR_RDMA_WRITE, incastMessageSize)

	swBefore := switchCounters(t, ctl["sw1"])
	nicBefore := map[string]map[string]uint64{}
	for _, h := range append(senders, "h5") {
		nicBefore[h] = nicCounters(t, ctl[h])
	}

	sc := startSwitchCapture(t, ctl["sw1"], ingress)
	runs := make([]bwRun, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, c := range conns {
		wg.Go(func() {
			runs[i], errs[i] = runBandwidth(c.pair, nic.IBV_WR_RDMA_WRITE, incastMessageSize, incastFlowMessages, 0, perfDefCQMod, 1)
		})
	}
	wg.Wait()
	took := time.Since(t0)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("flow %s -> h5: %v", senders[i], err)
		}
	}
	// The capture has drained when a second passes without a record (the
	// switch may be descheduled for a few hundred milliseconds).
	sc.quiesce(time.Second, 10*time.Second)
	swAfter := switchCounters(t, ctl["sw1"])
	nicAfter := map[string]map[string]uint64{}
	for _, h := range append(senders, "h5") {
		nicAfter[h] = nicCounters(t, ctl[h])
	}
	recs := sc.stop(t)

	// 1. Every flow's data arrived intact.
	if err := verifyBuffers(conns, nic.IBV_WR_RDMA_WRITE, incastMessageSize); err != nil {
		t.Errorf("data check: %v", err)
	}
	var total uint64
	for i, r := range runs {
		total += r.bytes
		t.Logf("flow %s -> h5: %d x %d bytes in %v (%.3f Gb/s)", senders[i], r.msgs, incastMessageSize,
			r.last.Sub(r.first).Round(time.Millisecond), float64(r.bytes)*8/r.last.Sub(r.first).Seconds()/1e9)
	}
	t.Logf("4:1 incast: %d bytes in %v, %.3f Gb/s at the 0.2 Gb/s bottleneck", total, took.Round(time.Millisecond), float64(total)*8/took.Seconds()/1e9)

	delta := func(after, before map[string]uint64, k string) uint64 { return after[k] - before[k] }
	prio := func(f string) string { return fmt.Sprintf(f, incastPriority) }

	// 2. Counters: the switch sent XOFF on every ingress port, each
	// sender's NIC received as many and was paused; nothing was dropped
	// on the lossless priority anywhere.
	for _, p := range append(ingress, "p5") {
		for k, v := range swAfter[p] {
			lossless := strings.HasPrefix(k, prio("prio%d_drop_")) || k == prio("pg%d_headroom_overflow")
			if d := v - swBefore[p][k]; d != 0 && (lossless || strings.HasPrefix(k, "drop_")) {
				t.Errorf("switch %s: %s = %d (a drop in a lossless incast)", p, k, d)
			}
		}
	}
	for i, p := range ingress {
		xoff := delta(swAfter[p], swBefore[p], prio("tx_prio%d_pause"))
		h := senders[i]
		got := delta(nicAfter[h], nicBefore[h], prio("rx_prio%d_pause"))
		t.Logf("sw1:%s sent %d XOFF (%d PFC frames, paused %d us, PG headroom watermark %d bytes); %s received %d, paused %d us",
			p, xoff, delta(swAfter[p], swBefore[p], "tx_pause_ctrl_phy"), delta(swAfter[p], swBefore[p], prio("tx_prio%d_pause_duration")),
			swAfter[p][prio("pg%d_headroom_watermark")], h, got, delta(nicAfter[h], nicBefore[h], prio("rx_prio%d_pause_duration")))
		if xoff == 0 {
			t.Errorf("sw1:%s sent no XOFF on priority %d: the incast did not congest the bottleneck", p, incastPriority)
		}
		if got != xoff {
			t.Errorf("%s received %d XOFF on priority %d, sw1:%s sent %d", h, got, incastPriority, p, xoff)
		}
	}
	if q := swAfter["p5"][prio("queue%d_watermark")]; q == 0 {
		t.Errorf("sw1:p5 queue %d never held anything", incastPriority)
	}
	for _, h := range append(senders, "h5") {
		for _, k := range nicLossCounters {
			if _, ok := nicAfter[h][k]; !ok {
				t.Errorf("%s has no counter %s", h, k)
			} else if d := delta(nicAfter[h], nicBefore[h], k); d != 0 {
				t.Errorf("%s: %s = %d in a lossless incast", h, k, d)
			}
		}
	}
	if got, want := delta(nicAfter["h5"], nicBefore["h5"], prio("rx_prio%d_bytes")), total; got < want {
		t.Errorf("h5 received %d bytes on priority %d, the flows wrote %d", got, incastPriority, want)
	}

	// 3. The capture holds the PFC frames the counters count.
	type pfcCount struct{ xoff, xon, frames, dataRx int }
	per := make([]pfcCount, len(ingress))
	annotated := 0
	for _, r := range recs {
		if r.Interface < 0 || r.Interface >= len(ingress) {
			t.Fatalf("record on interface %d; the capture has %d", r.Interface, len(ingress))
		}
		pc := &per[r.Interface]
		if strings.Contains(r.Comment, "XOFF sent on "+ingress[r.Interface]) {
			annotated++
		}
		if len(r.Data) < wire.EthernetSize || r.Data[12] != 0x88 || r.Data[13] != 0x08 {
			if strings.HasPrefix(r.Comment, "rx") {
				pc.dataRx++
			}
			continue
		}
		var mc wire.MACControl
		if err := wire.DecodeMACControl(r.Data, &mc); err != nil {
			t.Errorf("%s: MAC Control frame does not decode: %v", ingress[r.Interface], err)
			continue
		}
		if mc.Opcode != wire.MACControlOpPFC || !strings.HasPrefix(r.Comment, "tx") {
			t.Errorf("%s: unexpected MAC Control frame (opcode %#04x, %q)", ingress[r.Interface], mc.Opcode, r.Comment)
			continue
		}
		pc.frames++
		switch {
		case mc.Paused(incastPriority):
			pc.xoff++
		case mc.Resumed(incastPriority):
			pc.xon++
			// An XON is sent as a frame leaves; the PFC frame itself
			// says why.
			if !strings.Contains(r.Comment, "XON sent on "+ingress[r.Interface]+" for PG") {
				t.Errorf("%s: XON frame without its reason: %q", ingress[r.Interface], r.Comment)
			}
		}
	}
	if dir := os.Getenv("EMUFABRIC_KEEP_CAPTURE"); dir != "" {
		path := filepath.Join(dir, "incast4.pcap")
		if err := writeClassicPcap(path, recs); err != nil {
			t.Errorf("EMUFABRIC_KEEP_CAPTURE: %v", err)
		} else {
			t.Logf("capture (%d records) kept in %s", len(recs), path)
		}
	}
	if annotated == 0 {
		t.Errorf("no captured frame is annotated with the XOFF it triggered")
	}
	for i, p := range ingress {
		pc := per[i]
		xoff := int(delta(swAfter[p], swBefore[p], prio("tx_prio%d_pause")))
		frames := int(delta(swAfter[p], swBefore[p], "tx_pause_ctrl_phy"))
		drops := delta(swAfter[p], swBefore[p], "capture_drop")
		t.Logf("capture of sw1:%s: %d data frames received, %d PFC frames (%d XOFF, %d XON priority %d); capture drops %d",
			p, pc.dataRx, pc.frames, pc.xoff, pc.xon, incastPriority, drops)
		switch {
		case pc.xoff == 0:
			t.Errorf("the capture of sw1:%s holds no XOFF for priority %d", p, incastPriority)
		case pc.xoff != xoff || pc.frames != frames:
			// A capture too slow for the data drops data frames, never
			// PFC frames (swd/capture.go).
			t.Errorf("the capture of sw1:%s holds %d XOFF in %d PFC frames; the counters say %d in %d", p, pc.xoff, pc.frames, xoff, frames)
		}
		// Each message is 16 packets at the 4096-byte path MTU, each
		// sent once (nothing was lost, so nothing was retransmitted).
		rx := delta(swAfter[p], swBefore[p], prio("rx_prio%d_packets"))
		if want := uint64(incastFlowMessages * incastMessageSize / 4096); rx != want || (drops == 0 && pc.dataRx != int(want)) {
			t.Errorf("sw1:%s received %d packets on priority %d, the capture %d; %d messages are %d", p, rx, incastPriority, pc.dataRx, incastFlowMessages, want)
		}
	}
	e.down(t, l, socks)
}

// writeClassicPcap writes records as a classic pcap file (Ethernet).
func writeClassicPcap(path string, recs []capture.Record) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w, err := capture.NewPcapWriter(f, capture.LinkTypeEthernet)
	if err != nil {
		f.Close()
		return err
	}
	for _, r := range recs {
		if err := w.WritePacket(r.Timestamp, r.Data); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
