package nic

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// TestHostFramesShareWithQPs: a host that keeps its queue full on the
// RDMA priority (TCP over IPoIB on the RDMA VL did; here IPv4 marked
// DSCP 26, priority 3) takes turns with the QPs instead of going before
// them: an HCA serves IPoIB's UD QP as one more QP. The WRITEs complete
// with no ACK timeout, and both get a share of the link. (Host frames
// going first starved the QP: a chaos test saw RDMA at 2.5 MiB/s and
// transport retries beside iperf3.)
func TestHostFramesShareWithQPs(t *testing.T) {
	const n, size = 32, 1 << 16
	p := newPair(t, pairOpts{rate: 10e9, delay: 10 * clock.Microsecond})
	a, b := setupRC(t, p, qpOpts{bufSize: size, timeout: 14, retry: 7})
	var hostSent uint64
	fill := func() {
		for p.a.q[3].frames.n < 256 {
			f := p.pool.Get(1500)
			clear(f.Data)
			copy(f.Data, []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 26 << 2})
			p.a.SendHost(f)
			hostSent++
		}
	}
	for i := range n {
		if err := a.qp.PostSend(writeWR(a, b, uint64(i), size)); err != nil {
			t.Fatal(err)
		}
	}
	fill()
	start := p.l.Now()
	var wcs []WC
	p.l.run(start+100*clock.Millisecond, 1<<26, func() bool {
		fill()
		wcs = append(wcs, poll(a.scq)...)
		return len(wcs) >= n
	})
	took := p.l.Now() - start
	if len(wcs) != n {
		t.Fatalf("%d of %d WRITEs completed in %v beside a full host queue (%d ACK timeouts)", len(wcs), n, took, a.qp.Stats.Timeouts)
	}
	for _, wc := range wcs {
		if wc.Status != IBV_WC_SUCCESS {
			t.Fatalf("WRITE %d: %v", wc.WRID, wc.Status)
		}
	}
	// Alone, 2 MiB at 10 Gb/s is 1.7 ms; sharing the link about half
	// with the host, about twice that.
	if a.qp.Stats.Timeouts != 0 || took > 10*clock.Millisecond {
		t.Errorf("%d WRITEs of %d KiB took %v beside the host's frames, %d ACK timeouts", n, size>>10, took, a.qp.Stats.Timeouts)
	}
	t.Logf("%d WRITEs of %d KiB in %v beside %d host frames", n, size>>10, took, hostSent)
}
