package nicd

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/rt"
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
	// A moderation that does not divide the depth (perftest's defaults
	// are 128 and 100): time often runs out with only unsignaled
	// requests in flight, and the loop must post the closing signaled
	// one itself (it had polled for ten seconds, then failed).
	for i := range 5 {
		if res, err := a.PerfBW(&BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Depth: 16, CQMod: 5, DurationMs: 20 + 7*i}); err != nil || res.Msgs == 0 {
			t.Fatalf("duration run with cq_mod 5, depth 16: %+v %v", res, err)
		}
		if wcs, err := a.PollCQ(p.ACQ, 16, 0, 0); err != nil || len(wcs) != 0 {
			t.Errorf("completions left after the duration run with cq_mod 5: %+v %v", wcs, err)
		}
	}

	// perftest -l: lists of 8 (each closed by a signaled request, the
	// moderation dividing the list) on a depth of 12, which has room for
	// one list at a time: a run of iterations and a duration run both
	// end with every message complete and nothing left in the CQ.
	clear(p.BBuf.Bytes)
	if res, err := a.PerfBW(&BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Depth: 12, Iters: 200, CQMod: 4, PostList: 8}); err != nil || res.Msgs != 200 {
		t.Errorf("post list run: %+v %v", res, err)
	}
	if !bytes.Equal(p.ABuf.Bytes, p.BBuf.Bytes) {
		t.Error("post list run: destination memory differs")
	}
	if res, err := a.PerfBW(&BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Depth: 12, CQMod: 8, PostList: 8, DurationMs: 30}); err != nil || res.Msgs == 0 || res.Msgs%8 != 0 {
		t.Errorf("post list duration run: %+v %v (want whole lists)", res, err)
	}
	if wcs, err := a.PollCQ(p.ACQ, 16, 0, 0); err != nil || len(wcs) != 0 {
		t.Errorf("completions left after the post list runs: %+v %v", wcs, err)
	}

	for _, c := range []struct {
		bw   BWParams
		want string
	}{
		{BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Depth: 4, Iters: 8, CQMod: 1, PostList: 8}, "perf_bw: post_list 8"},
		{BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Depth: 16, Iters: 8, CQMod: 3, PostList: 8}, "perf_bw: post_list 8"},
		{BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: wr, Depth: 16, Iters: 12, CQMod: 4, PostList: 8}, "perf_bw: iters 12: a multiple of post_list"},
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

// TestPerfLat: the daemon times WRITEs, READs and SENDs one at a time, one
// sample each (a SEND's receive posted by the responder's daemon); bad
// parameters are refused with the field named.
func TestPerfLat(t *testing.T) {
	_, ctl := pairOfDaemons(t, testLab(t, ""))
	a, b := dial(t, ctl[0]), dial(t, ctl[1])
	const size = 4096
	p, err := NewPair(a, b, PairConfig{BufSize: size, Depth: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, op := range []nic.WROpcode{nic.IBV_WR_RDMA_WRITE, nic.IBV_WR_RDMA_READ, nic.IBV_WR_SEND} {
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
	// The responder's CQ holds nothing more: one receive per message,
	// each consumed.
	if wcs, err := b.PollCQ(p.BCQ, 16, 0, 0); err != nil || len(wcs) != 0 {
		t.Errorf("receive completions left: %+v %v", wcs, err)
	}
	wr := WorkRequest{Opcode: nic.IBV_WR_SEND, SG: []SGE{{Addr: p.AMR.Addr, Length: size, LKey: p.AMR.LKey}}}
	atomic := wr
	atomic.Opcode = nic.IBV_WR_ATOMIC_FETCH_AND_ADD
	for _, c := range []struct {
		lat  LatParams
		want string
	}{
		{LatParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: atomic, Iters: 1}, "perf_lat: opcode"},
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

// TestPerfRecv: for ib_send_bw the responder's daemon keeps its receive
// queue stocked: every message lands in the responder's buffer, exactly
// the run's count of receives is posted (none is left for the next run),
// and runs of several sizes follow one another on one pair. Bad
// parameters are errors naming the field; a client that leaves ends the
// run.
func TestPerfRecv(t *testing.T) {
	_, ctl := pairOfDaemons(t, testLab(t, ""))
	a, b := dial(t, ctl[0]), dial(t, ctl[1])
	const size = 1 << 14
	p, err := NewPair(a, b, PairConfig{BufSize: size, Depth: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i, n := range []int{size, 100, size / 2} {
		fill(p.ABuf.Bytes, uint64(i)+7)
		res, err := p.Run(nic.IBV_WR_SEND, n, 57) // not a multiple of the depth
		if err != nil || res.Messages != 57 {
			t.Fatalf("send_bw of %d bytes: %+v %v", n, res, err)
		}
		if !bytes.Equal(p.ABuf.Bytes[:n], p.BBuf.Bytes[:n]) {
			t.Errorf("send_bw of %d bytes: the responder's buffer differs", n)
		}
		if wcs, err := b.PollCQ(p.BCQ, 16, 0, 0); err != nil || len(wcs) != 0 {
			t.Errorf("send_bw of %d bytes: receive completions left: %+v %v", n, wcs, err)
		}
	}
	// No receive is left posted: a SEND now finds none and waits for
	// the receiver not ready timer, so a poll that does not wait sees
	// no completion for it.
	sw := WorkRequest{Opcode: nic.IBV_WR_SEND, Signaled: true, SG: []SGE{{Addr: p.AMR.Addr, Length: 64, LKey: p.AMR.LKey}}}
	if _, err := a.PostSend(p.AQP.Handle, &sw, 1); err != nil {
		t.Fatal(err)
	}
	if wcs, err := a.PollCQ(p.ACQ, 1, 1, 200*time.Millisecond); err != nil || len(wcs) != 0 {
		t.Errorf("a SEND completed although no receive should be left: %+v %v", wcs, err)
	}
	rwr := WorkRequest{SG: []SGE{{Addr: p.BMR.Addr, Length: 64, LKey: p.BMR.LKey}}}
	if _, err := b.PostRecv(p.BQP.Handle, &rwr, 1); err != nil {
		t.Fatal(err)
	}
	if wcs, err := a.PollCQ(p.ACQ, 1, 1, 10*time.Second); err != nil || len(wcs) != 1 || wcs[0].Status != nic.IBV_WC_SUCCESS {
		t.Fatalf("the SEND after its receive was posted: %+v %v", wcs, err)
	}
	if wcs, err := b.PollCQ(p.BCQ, 1, 1, 10*time.Second); err != nil || len(wcs) != 1 {
		t.Fatalf("its receive: %+v %v", wcs, err)
	}

	for _, c := range []struct {
		recv RecvParams
		want string
	}{
		{RecvParams{QP: p.BQP.Handle, CQ: p.BCQ, WR: rwr, Stock: 0, Iters: 1}, "perf_recv: stock 0"},
		{RecvParams{QP: p.BQP.Handle, CQ: p.BCQ, WR: rwr, Stock: 4, Iters: 0}, "perf_recv: iters 0"},
		{RecvParams{QP: p.BQP.Handle, CQ: p.BCQ, WR: rwr, Stock: 4, Iters: 2, Primed: 3}, "perf_recv: primed 3"},
		{RecvParams{QP: 999, CQ: p.BCQ, WR: rwr, Stock: 4, Iters: 2}, "no QP 999"},
	} {
		if _, err := b.PerfRecv(&c.recv); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.recv, err, c.want)
		}
	}
	if _, err := b.Call(&Request{Op: "perf_recv"}, -1); err == nil || !strings.Contains(err.Error(), "perf_recv: no recv") {
		t.Errorf("no recv: %v", err)
	}

	// A receiver waiting for messages that never come ends when its
	// client leaves, and the daemon releases the session.
	ran := make(chan error, 1)
	go func() {
		_, err := b.PerfRecv(&RecvParams{QP: p.BQP.Handle, CQ: p.BCQ, WR: rwr, Stock: 4, Iters: 1000})
		ran <- err
	}()
	// Three SENDs complete only on receives the run posted: it is
	// running.
	if _, err := a.PostSend(p.AQP.Handle, &sw, 3); err != nil {
		t.Fatal(err)
	}
	for got := 0; got < 3; {
		wcs, err := a.PollCQ(p.ACQ, 3, 1, 10*time.Second)
		if err != nil || len(wcs) == 0 {
			t.Fatalf("SENDs to the running receiver: %d of 3 completed: %v", got, err)
		}
		got += len(wcs)
	}
	watch := dial(t, ctl[1])
	b.Close()
	waitFor(t, "the session released", func() bool { st, err := watch.Status(); return err == nil && st.Sessions == 0 && st.QPs == 0 })
	if err := <-ran; err == nil {
		t.Error("the receiver of a closed client reported no error")
	}
}

// TestPerfPingPong: write_lat and send_lat play perftest's ping-pong. The
// responder's daemon answers every message with one of its own (each
// side's hw counters show the run's count of WRITEs received), a sample
// is half a round trip, read_lat stays a round trip, nothing is left
// posted, and a responder that goes away ends the requester's run at once
// with an error instead of a wait for answers.
//
// The link's delay is 20 ms (each emunic emulates the wire toward itself):
// a message and its answer take 40 ms at least, so no half is below 20 ms,
// and a message timed to its acknowledgement would take 40 ms or more, so
// a typical sample below that is a half; a READ's samples are whole round
// trips.
func TestPerfPingPong(t *testing.T) {
	const delay = 20 * time.Millisecond
	d, ctl := pairOfDaemons(t, specFrom(t, `name: long
topology:
  defaults: {rate: 100G, delay: 20ms, mtu: 4200}
  nodes:
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "h2:eth0"]
`))
	a, b := dial(t, ctl[0]), dial(t, ctl[1])
	const size, iters = 4000, 10
	pair, err := NewPair(a, b, PairConfig{BufSize: 4096, Depth: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer pair.Close()
	writes := func(c *Client) uint64 {
		r, err := c.Counters()
		if err != nil {
			t.Fatal(err)
		}
		return r.HWCounters["rx_write_requests"]
	}
	for _, op := range []nic.WROpcode{nic.IBV_WR_RDMA_WRITE, nic.IBV_WR_SEND, nic.IBV_WR_RDMA_READ} {
		wa, wb := writes(a), writes(b)
		fill(pair.ABuf.Bytes, uint64(op)+3)
		clear(pair.BBuf.Bytes)
		res, err := pair.Latency(op, size, iters)
		if err != nil || len(res.Samples) != iters {
			t.Fatalf("%v: %d samples, %v", op, len(res.Samples), err)
		}
		// The wire releases a frame up to rt.ReleaseSlack early.
		floor, ceil := delay-rt.ReleaseSlack.Duration(), 2*delay
		if op == nic.IBV_WR_RDMA_READ {
			floor, ceil = 2*(delay-rt.ReleaseSlack.Duration()), 0
		}
		if lo := res.Percentile(0); lo < floor {
			t.Errorf("%v: a sample of %v, below the %v a trip takes", op, lo, floor)
		}
		if med := res.Percentile(50); ceil > 0 && med >= ceil {
			t.Errorf("%v: typical %v, a whole round trip (at least %v), not half", op, med, ceil)
		}
		if !bytes.Equal(pair.ABuf.Bytes[:size], pair.BBuf.Bytes[:size]) {
			t.Errorf("%v: the responder's buffer differs from the source", op)
		}
		want := uint64(0)
		if op == nic.IBV_WR_RDMA_WRITE {
			want = iters
		}
		if da, db := writes(a)-wa, writes(b)-wb; da != want || db != want {
			t.Errorf("%v: WRITEs received: requester %d, responder %d, want %d each", op, da, db, want)
		}
		for _, c := range []struct {
			cl *Client
			cq uint32
		}{{a, pair.ACQ}, {b, pair.BCQ}} {
			if wcs, err := c.cl.PollCQ(c.cq, 16, 0, 0); err != nil || len(wcs) != 0 {
				t.Errorf("%v: completions left: %+v %v", op, wcs, err)
			}
		}
		t.Logf("%v %d B over a 20 ms link: typical %v", op, size, res.Percentile(50))
	}

	// The responder's request may reach its daemon after the first
	// message landed (emulab starts both sides at once): it still
	// answers that message.
	late := func() error {
		pair.BBuf.Bytes[size-1] = 0
		lat := &LatParams{QP: pair.AQP.Handle, CQ: pair.ACQ, Iters: 3, PingPong: true,
			WR: WorkRequest{Opcode: nic.IBV_WR_RDMA_WRITE, SG: []SGE{{Addr: pair.AMR.Addr, Length: size, LKey: pair.AMR.LKey}},
				RemoteAddr: pair.BMR.Addr, RKey: pair.BMR.RKey}}
		ping := make(chan error, 1)
		go func() { _, err := a.PerfLat(lat); ping <- err }()
		w := writes(b)
		waitFor(t, "the first message to land", func() bool { return writes(b) > w })
		perr := b.PerfPong(&PongParams{QP: pair.BQP.Handle, CQ: pair.BCQ, Iters: 3,
			WR: WorkRequest{Opcode: nic.IBV_WR_RDMA_WRITE, SG: []SGE{{Addr: pair.BMR.Addr, Length: size, LKey: pair.BMR.LKey}},
				RemoteAddr: pair.AMR.Addr, RKey: pair.AMR.RKey},
			Watch: &SGE{Addr: pair.BMR.Addr + size - 1, LKey: pair.BMR.LKey}})
		return errors.Join(perr, <-ping)
	}
	if err := late(); err != nil {
		t.Errorf("a responder that starts after the first message landed: %v", err)
	}

	// A lossy link: an answer can overtake the acknowledgement of the
	// message it answers (that one lost), and a latency run's send queue
	// holds one message (perftest's tx depth 1), so each side waits for
	// its last message's completion before posting the next.
	lossy, lctl := pairOfDaemons(t, testLab(t, ""))
	for i := range lossy {
		lc := dial(t, lctl[i])
		if _, err := lc.Call(&Request{Op: "link", Loss: ptr(0.03)}, -1); err != nil {
			t.Fatal(err)
		}
	}
	la, lb := dial(t, lctl[0]), dial(t, lctl[1])
	lp, err := NewPair(la, lb, PairConfig{BufSize: 4096, Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	for _, op := range []nic.WROpcode{nic.IBV_WR_RDMA_WRITE, nic.IBV_WR_SEND} {
		if res, err := lp.Latency(op, 64, 150); err != nil || len(res.Samples) != 150 {
			t.Errorf("%v over a link that loses 3%% each way: %d samples, %v", op, len(res.Samples), err)
		}
	}
	var lost uint64
	for i := range lossy {
		r, _ := dial(t, lctl[i]).Counters()
		lost += r.Transport["link_loss_rx"]
	}
	if lost == 0 {
		t.Error("no frame was lost: the lossy case tested nothing")
	}
	t.Logf("%d frames lost across the latency runs", lost)

	// Bad requests name what is wrong.
	wr := WorkRequest{Opcode: nic.IBV_WR_SEND, SG: []SGE{{Addr: pair.BMR.Addr, Length: 64, LKey: pair.BMR.LKey}}}
	write := wr
	write.Opcode = nic.IBV_WR_RDMA_WRITE
	for _, c := range []struct {
		pong PongParams
		want string
	}{
		{PongParams{QP: pair.BQP.Handle, CQ: pair.BCQ, WR: wr, Iters: 0}, "perf_pong: iters 0"},
		{PongParams{QP: pair.BQP.Handle, CQ: pair.BCQ, WR: wr, Iters: 1}, "needs recv"},
		{PongParams{QP: 999, CQ: pair.BCQ, WR: wr, Recv: &wr, Iters: 1}, "no QP 999"},
		{PongParams{QP: pair.BQP.Handle, CQ: pair.BCQ, WR: write, Iters: 1}, "needs watch"},
		{PongParams{QP: pair.BQP.Handle, CQ: pair.BCQ, WR: write, Iters: 1, Watch: &SGE{Addr: pair.BMR.Addr + 4096, LKey: pair.BMR.LKey}}, "outside region"},
		{PongParams{QP: pair.BQP.Handle, CQ: pair.BCQ, WR: write, Iters: 1, Watch: &SGE{Addr: pair.BMR.Addr, LKey: 0x77}}, "no region with lkey 0x77"},
	} {
		if err := b.PerfPong(&c.pong); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.pong, err, c.want)
		}
	}
	if _, err := b.Call(&Request{Op: "perf_pong"}, -1); err == nil || !strings.Contains(err.Error(), "perf_pong: no pong") {
		t.Errorf("no pong: %v", err)
	}

	// The responder's emunic goes away in the middle of a run: the
	// requester's run ends at once, not after its 10 s wait for an
	// answer.
	watch := dial(t, ctl[1])
	done := make(chan error, 1)
	go func() {
		_, err := pair.Latency(nic.IBV_WR_RDMA_WRITE, size, 1000)
		done <- err
	}()
	waitFor(t, "the run to start", func() bool {
		r, err := watch.Counters()
		return err == nil && r.HWCounters["rx_write_requests"] > iters+2
	})
	d[1].Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a run whose responder went away reported no error")
		}
		t.Logf("the run ended: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the requester still waits 5 s after its responder went away")
	}
}

// TestRunWait: a perf loop waits bwPollTimeout of the lab's time, so N
// times as long on the wall clock of a lab dilated N times, where one ACK
// timeout of perftest's default is seconds.
func TestRunWait(t *testing.T) {
	d, _ := pairOfDaemons(t, testLab(t, "time_dilation: 10\n"))
	if w := newSession(d[0]).runWait(0); w != 10*bwPollTimeout {
		t.Errorf("runWait at time_dilation 10: %v, want %v", w, 10*bwPollTimeout)
	}
}
