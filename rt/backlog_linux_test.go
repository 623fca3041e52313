package rt

import (
	"runtime"
	"testing"

	"github.com/emufabric/emufabric/frame"
)

// TestShmTxBacklog: a ring link's backlog is what the writer published
// and the peer has not read (each frame a record: header and padding to a
// cache line), from either direction's writer, and 0 once closed.
func TestShmTxBacklog(t *testing.T) {
	a, b := shmPair(t)
	defer b.Close()
	if n := a.TxBacklog(); n != 0 {
		t.Fatalf("fresh link: backlog %d, want 0", n)
	}
	frames := [][]byte{make([]byte, 4154), make([]byte, 60)}
	if _, err := a.Write(frames, 0); err != nil {
		t.Fatal(err)
	}
	want := int(recordSize(4154) + recordSize(60))
	if n := a.TxBacklog(); n != want {
		t.Fatalf("two frames unread: backlog %d, want %d", n, want)
	}
	if !a.TryWrite(make([]byte, 100)) {
		t.Fatal("TryWrite refused with room in the ring")
	}
	want += int(recordSize(100))
	if n := a.TxBacklog(); n != want {
		t.Fatalf("after TryWrite: backlog %d, want %d", n, want)
	}
	if n := b.TxBacklog(); n != 0 {
		t.Fatalf("the reader's own send ring: backlog %d, want 0", n)
	}
	readAll(t, b, 3)
	if n := a.TxBacklog(); n != 0 {
		t.Fatalf("all read: backlog %d, want 0", n)
	}
	a.Close()
	if n := a.TxBacklog(); n != 0 {
		t.Fatalf("closed: backlog %d, want 0", n)
	}
}

// TestMaxBacklog: MaxBacklogTime of the link, with a floor of MinBacklog.
func TestMaxBacklog(t *testing.T) {
	for _, c := range []struct {
		rate uint64
		want int
	}{
		{2e9, 500_000},
		{10e9, 2_500_000},
		{400e9, 100_000_000},
		{100e6, MinBacklog},
	} {
		if got := MaxBacklog(c.rate); got != c.want {
			t.Errorf("MaxBacklog(%d) = %d, want %d", c.rate, got, c.want)
		}
	}
}

// stallLink is a link whose writes wait until release is closed: a
// transport whose writer the machine has not scheduled yet.
type stallLink struct {
	release, closed chan struct{}
}

func (l *stallLink) Read([][]byte, []int, int) (int, error) { <-l.closed; return 0, ErrClosed }
func (l *stallLink) Write(bufs [][]byte, _ int) (int, error) {
	select {
	case <-l.release:
		return len(bufs), nil
	case <-l.closed:
		return 0, ErrClosed
	}
}
func (l *stallLink) BatchSize() int { return 4 }
func (l *stallLink) Close() error   { close(l.closed); return nil }

// TestPortTxBacklogCountsQueue: the frames waiting for a port's writer are
// in its TxBacklog, so a gate on the backlog sees a burst the writer has
// not put into the link yet (a gate that looked at the ring alone let
// twice its bound through when the writer ran late), and leave it once
// written.
func TestPortTxBacklogCountsQueue(t *testing.T) {
	loop := NewLoop(NewClock(1))
	defer loop.Close()
	link := &stallLink{release: make(chan struct{}), closed: make(chan struct{})}
	port, err := loop.Attach(link, PortConfig{Name: "p", TxQueue: 64, Deliver: func([]*frame.Frame) {}})
	if err != nil {
		t.Fatal(err)
	}
	// The loop does not run: the test's goroutine is its goroutine.
	for range 10 {
		port.Transmit(loop.Pool().Get(1000))
	}
	if n := port.TxBacklog(); n != 10_000 {
		t.Fatalf("10 frames of 1000 bytes handed to a stalled writer: backlog %d, want 10000", n)
	}
	close(link.release)
	for port.Counters.TxFrames.Load() < 10 {
		runtime.Gosched()
	}
	for port.TxBacklog() != 0 {
		runtime.Gosched() // the writer counts a batch written, then frees it
	}
}
