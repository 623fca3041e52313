package nic

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// Go-back-N against go-back-0 at 1/256 loss (issue test e; Guo et al.,
// SIGCOMM'16 §4.2): a 16 MiB WRITE (4096 packets of 4 KiB) completes with
// go-back-N; with go-back-0 each attempt loses about 16 packets, every
// loss restarts the message, no attempt gets through, and the bounded run
// ends with nothing delivered: the retry budget (which only progress
// renews) runs out instead of the run hanging.
func TestGoBackNvsGoBack0(t *testing.T) {
	const msg = 16 << 20
	const bound = 50 * clock.Millisecond
	run := func(mode Retransmit) (st QPStats, wcs []WC, wire uint64, at clock.Time) {
		set := func(c *Config) { c.Retransmit = mode }
		p := newPair(t, pairOpts{seed: 256, cfgA: set, cfgB: set})
		p.ab.loss = 1.0 / 256
		a, b := setupRC(t, p, qpOpts{bufSize: msg, retry: 7, timeout: 10})
		if err := a.qp.PostSend(writeWR(a, b, 1, msg)); err != nil {
			t.Fatal(err)
		}
		p.l.run(bound, 1<<26, func() bool {
			wcs = append(wcs, poll(a.scq)...)
			if len(wcs) > 0 && at == 0 {
				at = p.l.now
			}
			return len(wcs) > 0
		})
		return a.qp.Stats, wcs, p.a.port.TxBytesPhy, at
	}
	st, wcs, wireN, at := run(GoBackN)
	if len(wcs) != 1 || wcs[0].Status != IBV_WC_SUCCESS {
		t.Fatalf("go-back-N: %+v", wcs)
	}
	t.Logf("go-back-N: done at %v, %d packets resent, %d sequence NAKs, %.2f MB on the wire for a %d MiB message",
		at, st.RetransmittedPackets, st.SeqNAKs, float64(wireN)/1e6, msg>>20)

	st0, wcs0, wire0, at0 := run(GoBack0)
	if st0.CompletedBytes != 0 {
		t.Fatalf("go-back-0 delivered %d bytes", st0.CompletedBytes)
	}
	for _, wc := range wcs0 {
		if wc.Status == IBV_WC_SUCCESS {
			t.Fatalf("go-back-0 completed: %+v", wc)
		}
	}
	// Sequence-error NAKs use up retry_cnt (as rxe's completer does), and go-back-0
	// never makes the progress that would renew it: the QP gives up.
	if len(wcs0) != 1 || wcs0[0].Status != IBV_WC_RETRY_EXC_ERR || st0.SeqNAKs+st0.Timeouts != 7 {
		t.Errorf("go-back-0: completions %+v after %d NAKs and %d timeouts, want IBV_WC_RETRY_EXC_ERR after 7 retries", wcs0, st0.SeqNAKs, st0.Timeouts)
	}
	if st0.RetransmittedPackets == 0 || wire0 < msg/2 {
		t.Errorf("go-back-0: %d packets resent, %d bytes sent", st0.RetransmittedPackets, wire0)
	}
	status := "still restarting at the bound"
	if len(wcs0) > 0 {
		status = wcs0[0].Status.String() + " at " + at0.String()
	}
	t.Logf("go-back-0: no progress within %v: %s after %d restarts, %.2f MB on the wire, goodput 0",
		bound, status, st0.SeqNAKs+st0.Timeouts, float64(wire0)/1e6)
}
