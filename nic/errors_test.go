package nic

import (
	"fmt"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

func writeWR(a, b *endpoint, id uint64, n uint32) *SendWR {
	wr := &SendWR{WRID: id, Opcode: IBV_WR_RDMA_WRITE, SendFlags: IBV_SEND_SIGNALED,
		SGList: []SGE{{Addr: a.mr.Addr(), Length: n, LKey: a.mr.LKey()}}}
	wr.RDMA.RemoteAddr, wr.RDMA.RKey = b.mr.Addr(), b.mr.RKey()
	return wr
}

func runUntilWC(t *testing.T, p *pair, cq *CQ, want int, limit clock.Time) []WC {
	t.Helper()
	var wcs []WC
	p.l.run(limit, 1<<24, func() bool {
		wcs = append(wcs, poll(cq)...)
		return len(wcs) >= want
	})
	return wcs
}

// A WRITE to a bad R_Key completes with IBV_WC_REM_ACCESS_ERR, the
// requester QP goes to ERR and the WRs behind it are flushed; the
// responder counts the NAK it sent and errs too (class C).
func TestBadRKey(t *testing.T) {
	cases := []struct {
		name  string
		patch func(wr *SendWR, b *endpoint)
	}{
		{"wrong key", func(wr *SendWR, b *endpoint) { wr.RDMA.RKey ^= 0x55 }},
		{"out of range", func(wr *SendWR, b *endpoint) { wr.RDMA.RemoteAddr = b.mr.Addr() + uint64(b.mr.Len()) - 10 }},
		{"below region", func(wr *SendWR, b *endpoint) { wr.RDMA.RemoteAddr = b.mr.Addr() - 4096 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, pairOpts{seed: 1})
			a, b := setupRC(t, p, qpOpts{retry: 7})
			bad := writeWR(a, b, 1, 100)
			tc.patch(bad, b)
			if err := a.qp.PostSend(bad); err != nil {
				t.Fatal(err)
			}
			if err := a.qp.PostSend(writeWR(a, b, 2, 100)); err != nil {
				t.Fatal(err)
			}
			wcs := runUntilWC(t, p, a.scq, 2, clock.Second)
			if len(wcs) != 2 || wcs[0].WRID != 1 || wcs[0].Status != IBV_WC_REM_ACCESS_ERR || wcs[1].WRID != 2 || wcs[1].Status != IBV_WC_WR_FLUSH_ERR {
				t.Fatalf("completions %+v, want REM_ACCESS_ERR then WR_FLUSH_ERR", wcs)
			}
			if a.qp.State() != IBV_QPS_ERR || b.qp.State() != IBV_QPS_ERR {
				t.Errorf("states %v / %v, want ERR / ERR", a.qp.State(), b.qp.State())
			}
			if got := p.a.Count(ReqRemoteAccessErr); got != 1 {
				t.Errorf("req_remote_access_errors = %d, want 1", got)
			}
			if got := p.b.Count(RespRemoteAccessErr); got != 1 {
				t.Errorf("resp_remote_access_errors = %d, want 1", got)
			}
			// A WR posted in ERR is flushed at once.
			if err := a.qp.PostSend(writeWR(a, b, 3, 1)); err != nil {
				t.Fatal(err)
			}
			if wc := poll(a.scq); len(wc) != 1 || wc[0].Status != IBV_WC_WR_FLUSH_ERR {
				t.Errorf("post in ERR: %+v", wc)
			}
		})
	}
}

// An unreachable peer: every frame is lost; the requester retries
// retry_cnt times at the local ACK timeout, then completes with
// IBV_WC_RETRY_EXC_ERR.
func TestRetryExceeded(t *testing.T) {
	for _, retry := range []uint8{0, 3, 7} {
		p := newPair(t, pairOpts{seed: 2})
		a, b := setupRC(t, p, qpOpts{retry: retry, timeout: 4}) // 65.5 µs
		p.ab.down = true
		if err := a.qp.PostSend(writeWR(a, b, 9, 10000)); err != nil {
			t.Fatal(err)
		}
		wcs := runUntilWC(t, p, a.scq, 1, clock.Second)
		if len(wcs) != 1 || wcs[0].Status != IBV_WC_RETRY_EXC_ERR || wcs[0].WRID != 9 {
			t.Fatalf("retry_cnt %d: completions %+v", retry, wcs)
		}
		if got := p.a.Count(LocalAckTimeoutErr); got != uint64(retry) {
			t.Errorf("retry_cnt %d: local_ack_timeout_err = %d", retry, got)
		}
		if got := p.a.Count(ReqTransportRetries); got != 1 {
			t.Errorf("req_transport_retries_exceeded = %d, want 1", got)
		}
		// retry_cnt+1 timeouts of 4.096 µs * 2^4 each.
		if want := clock.Time(retry+1) * 65536 * clock.Nanosecond; p.l.now < want {
			t.Errorf("retry_cnt %d: gave up at %v, before %v", retry, p.l.now, want)
		}
		if a.qp.State() != IBV_QPS_ERR {
			t.Errorf("state %v", a.qp.State())
		}
	}
}

// RNR: a SEND before the receiver posted a receive WQE is NAKed RNR and
// retried after min_rnr_timer until the WQE appears; with a finite
// rnr_retry that is exhausted it fails with IBV_WC_RNR_RETRY_EXC_ERR.
func TestRNR(t *testing.T) {
	t.Run("recovers", func(t *testing.T) {
		for _, rnr := range []uint8{7, 5} {
			p := newPair(t, pairOpts{seed: 3})
			a, b := setupRC(t, p, qpOpts{rnrRetry: rnr, minRNR: 1, retry: 7}) // 10 µs
			copy(a.buf, "hello, rnr")
			wr := &SendWR{WRID: 1, Opcode: IBV_WR_SEND, SendFlags: IBV_SEND_SIGNALED,
				SGList: []SGE{{Addr: a.mr.Addr(), Length: 10, LKey: a.mr.LKey()}}}
			if err := a.qp.PostSend(wr); err != nil {
				t.Fatal(err)
			}
			p.l.run(35*clock.Microsecond, 1<<20, nil)
			if p.a.Count(RNRNakRetryErr) == 0 || p.b.Count(OutOfBuffer) == 0 {
				t.Fatalf("no RNR NAK: %s / %s", counters(p.a), counters(p.b))
			}
			if err := b.qp.PostRecv(&RecvWR{WRID: 7, SGList: []SGE{{Addr: b.mr.Addr(), Length: 64, LKey: b.mr.LKey()}}}); err != nil {
				t.Fatal(err)
			}
			wcs := runUntilWC(t, p, a.scq, 1, clock.Second)
			if len(wcs) != 1 || wcs[0].Status != IBV_WC_SUCCESS {
				t.Fatalf("rnr_retry %d: %+v", rnr, wcs)
			}
			r := poll(b.rcq)
			if len(r) != 1 || r[0].WRID != 7 || r[0].ByteLen != 10 || string(b.buf[:10]) != "hello, rnr" {
				t.Fatalf("receive %+v %q", r, b.buf[:10])
			}
		}
	})
	t.Run("exhausted", func(t *testing.T) {
		p := newPair(t, pairOpts{seed: 4})
		a, _ := setupRC(t, p, qpOpts{rnrRetry: 2, minRNR: 1, retry: 7})
		wr := &SendWR{WRID: 1, Opcode: IBV_WR_SEND, SGList: []SGE{{Addr: a.mr.Addr(), Length: 10, LKey: a.mr.LKey()}}}
		if err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
		wcs := runUntilWC(t, p, a.scq, 1, clock.Second)
		if len(wcs) != 1 || wcs[0].Status != IBV_WC_RNR_RETRY_EXC_ERR {
			t.Fatalf("%+v", wcs)
		}
		if p.a.Count(RNRNakRetryErr) != 2 || p.a.Count(ReqRNRRetries) != 1 {
			t.Errorf("counters %s", counters(p.a))
		}
	})
}

// A receive WQE shorter than the SEND: the receiver completes it with
// IBV_WC_LOC_LEN_ERR and NAKs; the sender sees IBV_WC_REM_INV_REQ_ERR.
func TestSendTooLong(t *testing.T) {
	p := newPair(t, pairOpts{seed: 5})
	a, b := setupRC(t, p, qpOpts{retry: 7})
	if err := b.qp.PostRecv(&RecvWR{WRID: 5, SGList: []SGE{{Addr: b.mr.Addr(), Length: 100, LKey: b.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	wr := &SendWR{WRID: 1, Opcode: IBV_WR_SEND, SendFlags: IBV_SEND_SIGNALED, SGList: []SGE{{Addr: a.mr.Addr(), Length: 101, LKey: a.mr.LKey()}}}
	if err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	wcs := runUntilWC(t, p, a.scq, 1, clock.Second)
	if len(wcs) != 1 || wcs[0].Status != IBV_WC_REM_INV_REQ_ERR {
		t.Fatalf("%+v", wcs)
	}
	r := poll(b.rcq)
	if len(r) != 1 || r[0].Status != IBV_WC_LOC_LEN_ERR || r[0].WRID != 5 {
		t.Fatalf("receive %+v", r)
	}
	if p.b.Count(RespLocalLengthErr) != 1 || p.a.Count(ReqRemoteInvalidReq) != 1 {
		t.Errorf("counters %s / %s", counters(p.a), counters(p.b))
	}
}

// A local SGE outside any region completes with IBV_WC_LOC_PROT_ERR
// without a packet, in order after the WR before it.
func TestLocalProtectionError(t *testing.T) {
	p := newPair(t, pairOpts{seed: 6})
	a, b := setupRC(t, p, qpOpts{retry: 7})
	if err := a.qp.PostSend(writeWR(a, b, 1, 5000)); err != nil {
		t.Fatal(err)
	}
	bad := writeWR(a, b, 2, 10)
	bad.SGList[0].LKey++
	if err := a.qp.PostSend(bad); err != nil {
		t.Fatal(err)
	}
	wcs := runUntilWC(t, p, a.scq, 2, clock.Second)
	if len(wcs) != 2 || wcs[0].Status != IBV_WC_SUCCESS || wcs[1].Status != IBV_WC_LOC_PROT_ERR {
		t.Fatalf("%+v", wcs)
	}
	if a.qp.State() != IBV_QPS_ERR {
		t.Errorf("state %v", a.qp.State())
	}
}

// The trace hook shows the state machines' paths by state name: a bad
// R_Key goes CHECK_RKEY -> ERR_REMOTE_ACCESS at the responder and
// CHECK_ACK -> ERROR at the completer.
func TestTraceStates(t *testing.T) {
	p := newPair(t, pairOpts{seed: 1})
	a, b := setupRC(t, p, qpOpts{retry: 7})
	var resp, comp []string
	p.b.SetTrace(func(qpn uint32, m, s string) {
		if m == "resp" {
			resp = append(resp, s)
		}
	})
	p.a.SetTrace(func(qpn uint32, m, s string) {
		if m == "comp" {
			comp = append(comp, s)
		}
	})
	wr := writeWR(a, b, 1, 10)
	wr.RDMA.RKey++
	if err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	runUntilWC(t, p, a.scq, 1, clock.Second)
	wantResp := []string{"CHECK_PSN", "CHECK_OP_SEQ", "CHECK_OP_VALID", "CHECK_RESOURCE", "CHECK_LENGTH", "CHECK_RKEY", "ERR_REMOTE_ACCESS"}
	wantComp := []string{"GET_WQE", "CHECK_PSN", "CHECK_ACK", "ERROR"}
	if fmt.Sprint(resp) != fmt.Sprint(wantResp) || fmt.Sprint(comp) != fmt.Sprint(wantComp) {
		t.Errorf("responder %v\ncompleter %v", resp, comp)
	}
}
