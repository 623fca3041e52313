package rt

import (
	"sync"

	"github.com/emufabric/emufabric/frame"
)

// Loop is the one goroutine an engine runs on. It serializes the three
// things that call into an engine: frames arriving on its ports, its
// Clock's timers, and functions posted by other goroutines (control
// socket commands, counters snapshots). The engine, its frame pool and its
// timers are only ever touched from Run's goroutine, so the I/O-free
// engines need no locks.
//
// Lifecycle: NewLoop, Attach ports (before Run, or later from a posted
// function), Run in a goroutine, Close. Close stops Run and closes every
// attached port.
type Loop struct {
	clk  *Clock
	pool *frame.Pool

	posts chan func()
	rx    chan *rxBatch
	quit  chan struct{}
	done  chan struct{}

	// after runs once each event has been handled (see SetAfterEvent).
	after func()

	mu      sync.Mutex // guards ports, closed and started against Close from another goroutine
	ports   []*Port
	closed  bool
	started bool
	once    sync.Once
}

// NewLoop returns a loop driving clk's timers. Its frame pool is the one
// the engine and the ports share; it may only be used on the loop's
// goroutine.
func NewLoop(clk *Clock) *Loop {
	return &Loop{
		clk:   clk,
		pool:  frame.NewPool(),
		posts: make(chan func(), 64),
		rx:    make(chan *rxBatch, 16),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
	}
}

// Clock is the loop's clock; hand it to the engine.
func (l *Loop) Clock() *Clock { return l.clk }

// Pool is the loop's frame pool; hand it to the engine. Loop goroutine only.
func (l *Loop) Pool() *frame.Pool { return l.pool }

// Post runs fn on the loop's goroutine. It may be called from any
// goroutine (but blocks while the loop is busy and its queue is full); it
// reports false when the loop has been closed and fn will not run.
func (l *Loop) Post(fn func()) bool {
	select {
	case <-l.quit:
		return false
	default:
	}
	select {
	case l.posts <- fn:
		return true
	case <-l.quit:
		return false
	}
}

// SetAfterEvent sets fn to run on the loop's goroutine after every event
// it handles: a received batch, the timers that fell due together, a
// posted function. A driver that holds work back within an event finishes
// it there: a TAP port merging the segments one batch produced into one
// write flushes them, so nothing waits for a later event or a timer. Call
// it before Run (or from the loop's goroutine); nil removes it.
func (l *Loop) SetAfterEvent(fn func()) { l.after = fn }

// Run is the event loop. It returns after Close.
func (l *Loop) Run() {
	l.mu.Lock()
	if l.closed || l.started {
		l.mu.Unlock()
		return
	}
	l.started = true
	l.mu.Unlock()
	defer close(l.done)
	l.clk.start()
	defer l.clk.stop()
	l.clk.settle() // timers armed before Run
	wake := l.clk.wake.C
	for {
		select {
		case <-wake:
			l.clk.expire()
		case b := <-l.rx:
			l.clk.catchUp()
			l.clk.beginEvent()
			b.port.receive(b)
			l.clk.endEvent()
		case fn := <-l.posts:
			l.clk.catchUp()
			l.clk.beginEvent()
			fn()
			l.clk.endEvent()
		case <-l.quit:
			return
		}
		l.clk.settle()
		if l.after != nil {
			l.after()
		}
	}
}

// Close stops Run (waiting for it if it was started) and closes every
// attached port. It may be called from any goroutine except the loop's own
// (a posted function calls CloseAsync instead).
func (l *Loop) Close() {
	l.shutdown()
	l.mu.Lock()
	started := l.started
	l.mu.Unlock()
	if started {
		<-l.done
	}
	l.closePorts()
}

// CloseAsync stops the loop without waiting; for use from the loop's own
// goroutine. Ports are closed by a later Close.
func (l *Loop) CloseAsync() { l.shutdown() }

func (l *Loop) shutdown() {
	l.once.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		close(l.quit)
	})
}

// closePorts closes the ports outside the lock: Port.Close waits for its
// goroutines.
func (l *Loop) closePorts() {
	l.mu.Lock()
	ports := l.ports
	l.ports = nil
	l.mu.Unlock()
	for _, p := range ports {
		p.Close()
	}
}

// Done is closed when a started Run has returned.
func (l *Loop) Done() <-chan struct{} { return l.done }
