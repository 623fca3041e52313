package nic

import (
	"bytes"
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
)

// TestReadsThroughSpuriousTimeouts: a requester whose ACK timer is
// shorter than the round trip times out on reads whose responses are
// still on their way and sends them again; the responder replays them as
// duplicates (IBA 9.7.5.1.3). Responses of the first sending complete
// reads, the requester posts new ones, and a new READ must find a
// responder resource even while the oldest one is busy replaying a read
// the requester has already finished: that replay is moot (rxe reclaims
// the oldest resource likewise). Every READ completes, none with an
// invalid-request NAK.
func TestReadsThroughSpuriousTimeouts(t *testing.T) {
	const n, size = 64, 1 << 16
	p := newPair(t, pairOpts{rate: 1e9, delay: clock.Millisecond})
	a, b := setupRC(t, p, qpOpts{bufSize: size, timeout: 8, retry: 7, rdAtomic: 4, sendWR: 128})
	for i := range b.buf {
		b.buf[i] = byte(i*7 + 3)
	}
	posted := 0
	post := func() {
		for ; posted < n; posted++ {
			wr := &SendWR{WRID: uint64(posted), Opcode: IBV_WR_RDMA_READ, SendFlags: IBV_SEND_SIGNALED,
				SGList: []SGE{{Addr: a.mr.Addr(), Length: size, LKey: a.mr.LKey()}}}
			wr.RDMA.RemoteAddr, wr.RDMA.RKey = b.mr.Addr(), b.mr.RKey()
			if err := a.qp.PostSend(wr); err != nil {
				return // the send queue is full: post the rest later
			}
		}
	}
	post()
	var wcs []WC
	p.l.run(2*clock.Second, 1<<26, func() bool {
		got := poll(a.scq)
		wcs = append(wcs, got...)
		for _, wc := range got {
			if wc.Status != IBV_WC_SUCCESS {
				return true
			}
		}
		post()
		return len(wcs) >= n
	})
	if len(wcs) != n {
		t.Fatalf("%d of %d reads completed", len(wcs), n)
	}
	for _, wc := range wcs {
		if wc.Status != IBV_WC_SUCCESS {
			t.Fatalf("read %d: %v (responder invalid requests %d, duplicates %d)", wc.WRID, wc.Status, p.b.Count(RespInvalidRequest), p.b.Count(DuplicateRequest))
		}
	}
	if !bytes.Equal(a.buf, b.buf) {
		t.Error("the requester's buffer differs from the responder's after the reads")
	}
	if a.qp.Stats.Timeouts == 0 || p.b.Count(DuplicateRequest) == 0 {
		t.Errorf("no spurious timeout (%d) or duplicate (%d): the test did not test", a.qp.Stats.Timeouts, p.b.Count(DuplicateRequest))
	}
	t.Logf("%d reads, %d timeouts, %d duplicate requests at the responder", n, a.qp.Stats.Timeouts, p.b.Count(DuplicateRequest))
}

// TestReadsOneResponseLost: sixteen READs in flight, the last packet of
// the first one's response lost (with the QP's ACK timeout, and without
// one: an infinite timeout must not stall it). Every packet of the other fifteen
// responses, already on its way, lies past the first READ: each is the
// same implied NAK. The requester resends once for the gap and drops the
// rest until the gap fills, as for a gap inside a response; retrying for
// each spent the retry count (7) within microseconds, and read_bw failed
// with IBV_WC_RETRY_EXC_ERR on any loss.
func TestReadsOneResponseLost(t *testing.T) {
	for _, infinite := range []bool{false, true} {
		readsOneResponseLost(t, infinite)
	}
}

func readsOneResponseLost(t *testing.T, infinite bool) {
	const n, size = 16, 1 << 16
	p := newPair(t, pairOpts{rate: 10e9, delay: 2 * clock.Microsecond})
	a, b := setupRC(t, p, qpOpts{bufSize: size, timeout: 14, retry: 7, rdAtomic: 16, sendWR: 32})
	if infinite {
		a.qp.timeout = 0 // IBA timeout 0: the ACK timer never fires
	}
	for i := range b.buf {
		b.buf[i] = byte(i*5 + 1)
	}
	dropped := false
	p.ba.drop = func(f *frame.Frame) bool {
		if !dropped && opcodeOf(f) == bth.RCReadResponseLast {
			dropped = true
			return true
		}
		return false
	}
	for i := range n {
		wr := &SendWR{WRID: uint64(i), Opcode: IBV_WR_RDMA_READ, SendFlags: IBV_SEND_SIGNALED,
			SGList: []SGE{{Addr: a.mr.Addr(), Length: size, LKey: a.mr.LKey()}}}
		wr.RDMA.RemoteAddr, wr.RDMA.RKey = b.mr.Addr(), b.mr.RKey()
		if err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	w := runUntilWC(t, p, a.scq, n, clock.Second)
	for _, wc := range w {
		if wc.Status != IBV_WC_SUCCESS {
			t.Fatalf("read %d: %v (implied NAKs %d, retries exceeded %d)", wc.WRID, wc.Status, p.a.Count(ImpliedNakSeqErr), p.a.Count(ReqTransportRetries))
		}
	}
	if len(w) != n || !dropped {
		t.Fatalf("%d of %d reads completed (a response dropped: %v)", len(w), n, dropped)
	}
	if k := p.a.Count(ImpliedNakSeqErr); k != 1 {
		t.Errorf("%d implied NAKs for one lost response packet, want 1", k)
	}
	// The implied NAK alone recovers it: the responder answers the
	// resent READ before the later ones (dropLater), and no ACK timer
	// has to fire.
	if n := p.a.Count(LocalAckTimeoutErr); n != 0 {
		t.Errorf("%d ACK timeouts: the gap was not filled by the implied NAK's resend", n)
	}
	if !bytes.Equal(a.buf, b.buf) {
		t.Error("the requester's buffer differs from the responder's after the reads")
	}
}
