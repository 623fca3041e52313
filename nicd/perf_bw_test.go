package nicd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/nic"
)

// TestPerfBW: the daemon runs perftest's bandwidth loop on a client's QP:
// every message completes once, the samples climb to the bytes moved, and
// the destination memory holds the source's bytes; bad parameters are
// errors naming the field, and a failing message ends the run with its
// status.
func TestPerfBW(t *testing.T) {
	_, ctl := pairOfDaemons(t, testLab(t, ""))
	a, b := dial(t, ctl[0]), dial(t, ctl[1])
	const size = 1 << 16
	p, err := NewPair(a, b, PairConfig{BufSize: size, Depth: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	fill(p.ABuf.Bytes, 5)
	wr := WorkRequest{Opcode: nic.IBV_WR_RDMA_WRITE, SG: []SGE{{Addr: p.AMR.Addr, Length: size, LKey: p.AMR.LKey}},
		RemoteAddr: p.BMR.Addr, RKey: p.BMR.RKey}
	// 203 messages: the last is signaled although 203 is not a multiple
	// of the moderation.
	res, err := a.PerfBW(&BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Depth: 16, Iters: 203, CQMod: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Msgs != 203 || res.LastNs < res.FirstNs || len(res.Samples) < 2 {
		t.Fatalf("result: %d msgs, first %d last %d, %d samples", res.Msgs, res.FirstNs, res.LastNs, len(res.Samples))
	}
	for i := 1; i < len(res.Samples); i++ {
		if s, q := res.Samples[i], res.Samples[i-1]; s.AtNs < q.AtNs || s.Bytes < q.Bytes {
			t.Fatalf("samples go back: %+v after %+v", s, q)
		}
	}
	if got := res.Samples[len(res.Samples)-1].Bytes; got != 203*size {
		t.Errorf("last sample %d bytes, want %d", got, 203*size)
	}
	if !bytes.Equal(p.ABuf.Bytes, p.BBuf.Bytes) {
		t.Error("destination memory differs")
	}
	// Nothing is left in the CQ: every signaled completion was consumed.
	if wcs, err := a.PollCQ(p.ACQ, 16, 0, 0); err != nil || len(wcs) != 0 {
		t.Errorf("completions left: %+v %v", wcs, err)
	}

	// A duration run ends at a signaled request, whose completion says
	// every message arrived: nothing is left behind in the CQ.
	if res, err := a.PerfBW(&BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Depth: 16, CQMod: 4, DurationMs: 50}); err != nil || res.Msgs == 0 {
		t.Errorf("duration run: %+v %v", res, err)
	}
	if wcs, err := a.PollCQ(p.ACQ, 16, 0, 0); err != nil || len(wcs) != 0 {
		t.Errorf("completions left after the duration run: %+v %v", wcs, err)
	}

	for _, c := range []struct {
		bw   BWParams
		want string
	}{
		{BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Depth: 0, Iters: 1, CQMod: 1}, "perf_bw: depth 0"},
		{BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Depth: 4, Iters: 1, CQMod: 8}, "perf_bw: cq_mod 8"},
		{BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Depth: 4, Iters: 0, CQMod: 1}, "perf_bw: iters 0"},
		{BWParams{QP: 999, CQ: p.ACQ, WR: wr, Depth: 4, Iters: 1, CQMod: 1}, "no QP 999"},
	} {
		if _, err := a.PerfBW(&c.bw); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.bw, err, c.want)
		}
	}
	// A bad rkey: the responder refuses the first write, and the run ends
	// with the completion's status.
	bad := wr
	bad.RKey ^= 0x100
	if _, err := a.PerfBW(&BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: bad, Depth: 4, Iters: 8, CQMod: 2}); err == nil || !strings.Contains(err.Error(), "perf_bw: message") {
		t.Errorf("bad rkey: %v", err)
	}
	if _, err := a.Call(&Request{Op: "perf_bw"}, -1); err == nil || !strings.Contains(err.Error(), "perf_bw: no bw") {
		t.Errorf("no bw: %v", err)
	}
}

// TestPerfBWClientGone: a client that closes its connection during a long
// perf_bw run (emulab perf -D, then Ctrl-C) ends it: the daemon releases
// the session (its QP and mappings) at once, not when the duration is up.
func TestPerfBWClientGone(t *testing.T) {
	_, ctl := pairOfDaemons(t, testLab(t, ""))
	a, b := dial(t, ctl[0]), dial(t, ctl[1])
	p, err := NewPair(a, b, PairConfig{BufSize: 1 << 16, Depth: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	wr := WorkRequest{Opcode: nic.IBV_WR_RDMA_WRITE, SG: []SGE{{Addr: p.AMR.Addr, Length: 1 << 16, LKey: p.AMR.LKey}},
		RemoteAddr: p.BMR.Addr, RKey: p.BMR.RKey}
	ran := make(chan error, 1)
	go func() {
		_, err := a.PerfBW(&BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Depth: 16, CQMod: 4, DurationMs: 600_000})
		ran <- err
	}()
	watch := dial(t, ctl[0])
	waitFor(t, "the run to start", func() bool { st, err := watch.Status(); return err == nil && st.QPs == 1 })
	a.Close()
	waitFor(t, "the session released", func() bool { st, err := watch.Status(); return err == nil && st.Sessions == 0 && st.QPs == 0 })
	if err := <-ran; err == nil {
		t.Error("the run of a closed client reported no error")
	}
}

// TestPerfLat: the daemon times WRITEs and READs one at a time, one sample
// each; SEND and bad parameters are refused with the field named.
func TestPerfLat(t *testing.T) {
	_, ctl := pairOfDaemons(t, testLab(t, ""))
	a, b := dial(t, ctl[0]), dial(t, ctl[1])
	const size = 4096
	p, err := NewPair(a, b, PairConfig{BufSize: size, Depth: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, op := range []nic.WROpcode{nic.IBV_WR_RDMA_WRITE, nic.IBV_WR_RDMA_READ} {
		fill(p.ABuf.Bytes, uint64(op)+1)
		fill(p.BBuf.Bytes, uint64(op)+2)
		res, err := p.Latency(op, size, 20)
		if err != nil || len(res.Samples) != 20 {
			t.Fatalf("%v: %d samples, %v", op, len(res.Samples), err)
		}
		for _, s := range res.Samples {
			if s <= 0 {
				t.Fatalf("%v: sample %v", op, s)
			}
		}
		if !bytes.Equal(p.ABuf.Bytes, p.BBuf.Bytes) {
			t.Errorf("%v: the buffers differ", op)
		}
	}
	wr := WorkRequest{Opcode: nic.IBV_WR_SEND, SG: []SGE{{Addr: p.AMR.Addr, Length: size, LKey: p.AMR.LKey}}}
	for _, c := range []struct {
		lat  LatParams
		want string
	}{
		{LatParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Iters: 1}, "perf_lat: opcode"},
		{LatParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Iters: 0}, "perf_lat: iters 0"},
	} {
		if _, err := a.PerfLat(&c.lat); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.lat, err, c.want)
		}
	}
	if _, err := a.Call(&Request{Op: "perf_lat"}, -1); err == nil || !strings.Contains(err.Error(), "perf_lat: no lat") {
		t.Errorf("no lat: %v", err)
	}
}
