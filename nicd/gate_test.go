package nicd

import (
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/rt"
	"github.com/emufabric/emufabric/wire"
)

// backlogLink is a link whose peer never reads: what it was given stays
// in its backlog until the test says the peer took it.
type backlogLink struct {
	backlog atomic.Int64
	closed  chan struct{}
	once    sync.Once
}

func (l *backlogLink) Read([][]byte, []int, int) (int, error) { <-l.closed; return 0, rt.ErrClosed }
func (l *backlogLink) Write(bufs [][]byte, _ int) (int, error) {
	for _, b := range bufs {
		l.backlog.Add(int64(len(b)))
	}
	return len(bufs), nil
}
func (l *backlogLink) BatchSize() int { return 8 }
func (l *backlogLink) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *backlogLink) TxBacklog() int { return int(l.backlog.Load()) }

// TestGateHoldsOnLinkBacklog: a switch that reads its ring late must not
// find more than rt.MaxBacklog of the link waiting (at 2 Gb/s the ring's
// 4 MiB is 17 ms of traffic that overruns a lossless PG's headroom by
// megabytes): the gate holds the NIC at the bound and lets it go once the
// peer has read the backlog down to half of it.
func TestGateHoldsOnLinkBacklog(t *testing.T) {
	const rate = 2e9
	g, link, port, loop := newBacklogGate(t, rate)
	bound := rt.MaxBacklog(rate)
	if bound != 500_000 {
		t.Fatalf("MaxBacklog(2 Gb/s) = %d, want 2 ms of the link, 500000 bytes", bound)
	}
	// The writer goroutine moves each frame into the link; wait for it,
	// so that the test sets the backlog after it.
	sendAndSettle := func() {
		want := port.Counters.TxFrames.Load() + 1
		g.Transmit(loop.Pool().Get(4096))
		for port.Counters.TxFrames.Load() < want {
			runtime.Gosched()
		}
	}

	// The gate looks at the backlog as each frame is handed over, that
	// frame included (it waits in the port writer's queue, or the writer
	// has put it into the link already): well below the bound, not held.
	link.backlog.Store(int64(bound / 2))
	sendAndSettle()
	if g.held {
		t.Fatalf("held at a backlog of %d bytes and a frame, below the bound %d", bound/2, bound)
	}
	link.backlog.Store(int64(bound))
	sendAndSettle()
	if !g.held || g.backlogHolds != 1 || g.holds != 1 {
		t.Fatalf("backlog %d >= bound %d: held %v, backlog holds %d, holds %d; want held once for the backlog",
			bound, bound, g.held, g.backlogHolds, g.holds)
	}

	link.backlog.Store(int64(bound/2 + 1)) // the peer read some: not enough
	g.check()
	if !g.held {
		t.Fatal("released above half the bound")
	}
	link.backlog.Store(int64(bound / 2))
	g.check()
	if g.held {
		t.Fatalf("still held at a backlog of %d bytes, half the bound", port.TxBacklog())
	}
	if g.backlogMax < bound {
		t.Fatalf("backlogMax %d, want at least %d", g.backlogMax, bound)
	}
}

// TestGateStopsPollingDeadLink: a gate held when its link goes away stops
// polling. The frames the port's writer had not written when the link
// closed stay in its backlog and in flight for good, so a gate that kept
// re-checking woke the loop every 20 us for as long as the switch stayed
// away.
func TestGateStopsPollingDeadLink(t *testing.T) {
	g, link, port, loop := newBacklogGate(t, 2e9)
	link.backlog.Store(int64(rt.MaxBacklog(2e9)))
	g.Transmit(loop.Pool().Get(4096))
	if !g.held {
		t.Fatal("not held at the backlog bound")
	}
	port.Close()
	<-port.Done()
	g.check()
	if at, armed := g.timer.(*rt.Timer).When(); armed {
		t.Fatalf("the gate of a closed link polls again at %v", at)
	}
}

// newBacklogGate is a transmit gate, up, of a NIC at rate whose port's
// link is a backlogLink, on a loop that does not run (the test's
// goroutine is the loop's); the loop is closed at the test's end.
func newBacklogGate(t *testing.T, rate uint64) (*txGate, *backlogLink, *rt.Port, *rt.Loop) {
	t.Helper()
	clk := rt.NewClock(1)
	loop := rt.NewLoop(clk)
	t.Cleanup(func() { loop.Close() })
	link := &backlogLink{closed: make(chan struct{})}
	port, err := loop.Attach(link, rt.PortConfig{Name: "h1:eth0", TxQueue: linkTxQueue, Deliver: func(fs []*frame.Frame) {
		for _, f := range fs {
			f.Put()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := nic.New(nic.DefaultConfig("h1", wire.MAC{2, 0, 0, 0, 0, 1}, netip.MustParseAddr("10.0.0.1"), rate), clk, loop.Pool())
	if err != nil {
		t.Fatal(err)
	}
	g := newTxGate(n, port, clk)
	g.setUp(true)
	return g, link, port, loop
}
