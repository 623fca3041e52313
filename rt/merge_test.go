package rt

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/emufabric/emufabric/frame"
)

// mergeLink records what a port's writer does with a merging link: frames
// handed to Queue, and the Flush that must follow each batch. Write must
// never be used for such a link.
type mergeLink struct {
	mu      sync.Mutex
	queued  [][]byte
	pending int // queued since the last Flush
	flushes int
	writes  int
	closed  chan struct{}
	once    sync.Once
}

func (m *mergeLink) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	<-m.closed
	return 0, ErrClosed
}

func (m *mergeLink) Write(bufs [][]byte, offset int) (int, error) {
	m.mu.Lock()
	m.writes++
	m.mu.Unlock()
	return len(bufs), nil
}

func (m *mergeLink) BatchSize() int { return 8 }

func (m *mergeLink) Close() error {
	m.once.Do(func() { close(m.closed) })
	return nil
}

func (m *mergeLink) Queue(b []byte, offset int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queued = append(m.queued, bytes.Clone(b[offset:]))
	m.pending++
	return nil
}

func (m *mergeLink) Flush() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.flushes++
	m.pending = 0
	return nil
}

// TestPortMergingLink: a port whose link merges (a TAP) hands every frame
// to Queue, in order, and flushes after each batch, so nothing waits in a
// train; the port counts every frame.
func TestPortMergingLink(t *testing.T) {
	const n = 100
	loop := NewLoop(NewClock(1))
	ml := &mergeLink{closed: make(chan struct{})}
	p, err := loop.Attach(ml, PortConfig{TxQueue: 2 * n, Deliver: func(fs []*frame.Frame) {}})
	if err != nil {
		t.Fatal(err)
	}
	go loop.Run()
	defer loop.Close()

	done := make(chan struct{})
	loop.Post(func() {
		for i := range n {
			f := loop.Pool().Get(64)
			f.Data[0] = byte(i)
			p.Transmit(f)
		}
		close(done)
	})
	<-done
	deadline := time.Now().Add(10 * time.Second)
	for p.Counters.TxFrames.Load() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if len(ml.queued) != n || p.Counters.TxFrames.Load() != n {
		t.Fatalf("queued %d, TxFrames %d; want %d", len(ml.queued), p.Counters.TxFrames.Load(), n)
	}
	for i, b := range ml.queued {
		if b[0] != byte(i) {
			t.Fatalf("frame %d queued out of order", i)
		}
	}
	if ml.pending != 0 || ml.flushes == 0 {
		t.Errorf("%d frames left unflushed (%d flushes)", ml.pending, ml.flushes)
	}
	if ml.writes != 0 {
		t.Errorf("Write used %d times on a merging link", ml.writes)
	}
	if p.Counters.TxBytes.Load() != n*64 {
		t.Errorf("TxBytes %d", p.Counters.TxBytes.Load())
	}
}
