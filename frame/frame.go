// Package frame holds the unit that moves between ports: one link-layer
// frame in a pooled buffer with headroom, plus the metadata the engines
// attach to it on its way (ingress port, priority, timestamps, a note for
// captures).
//
// Ownership: whoever holds a *Frame owns it until it hands it on (a Transmit
// or Deliver call transfers ownership to the callee) or returns it with Put.
// A frame must not be touched after it was handed on or put back.
package frame

import "github.com/emufabric/emufabric/clock"

const (
	// Headroom is reserved in front of the frame so Ethernet+802.1Q+IPv6+UDP
	// (or LRH+GRH) can be prepended in place.
	Headroom = 128
	// MaxFrame is the largest frame we carry: a 9216-byte jumbo with
	// 802.1Q, or a 4096-byte IB MTU with every header, both fit.
	MaxFrame = 9600
	bufSize  = Headroom + MaxFrame
)

// Frame is one frame. Data is always a slice of the frame's own buffer.
type Frame struct {
	buf  *[bufSize]byte
	off  int // start of Data within buf
	Data []byte

	// Metadata. Drivers and engines fill what they know; Reset clears it.
	InPort   int        // ingress port index at the current node, -1 if none
	Priority uint8      // 802.1p priority / IB SL the classifier chose
	Class    uint8      // traffic class / queue / VL at the current node
	PG       uint8      // ingress priority group at the current node
	HeadAt   clock.Time // when the headers had arrived (cut-through point)
	TailAt   clock.Time // when the last bit arrives / arrived
	Flow     uint32     // traffic-source flow id, 0 if none (simulator bookkeeping)
	Seq      uint64     // traffic-source sequence, for completion accounting
	Born     clock.Time // when the source created it
	Note     string     // what the emulator decided, for pcapng comments
	Corrupt  bool       // a link corrupted it; the receiver's CRC check must fail

	pool *Pool
}

// Reset empties the frame to length n at the default headroom and clears
// its metadata. The bytes are not zeroed.
func (f *Frame) Reset(n int) {
	f.off = Headroom
	f.Data = f.buf[Headroom : Headroom+n]
	f.InPort = -1
	f.Priority, f.Class, f.PG = 0, 0, 0
	f.HeadAt, f.TailAt, f.Born = 0, 0, 0
	f.Flow, f.Seq = 0, 0
	f.Note = ""
	f.Corrupt = false
}

// Prepend grows the frame by n bytes at the front and returns them.
// It panics if the headroom is exhausted: that is a programming error.
func (f *Frame) Prepend(n int) []byte {
	if n > f.off {
		panic("frame: headroom exhausted")
	}
	f.off -= n
	f.Data = f.buf[f.off : f.off+len(f.Data)+n]
	return f.Data[:n]
}

// TrimFront drops n bytes from the front.
func (f *Frame) TrimFront(n int) {
	f.off += n
	f.Data = f.Data[n:]
}

// SetLen sets the frame's length, keeping its start.
func (f *Frame) SetLen(n int) { f.Data = f.buf[f.off : f.off+n] }

// Cap is the largest length SetLen accepts at the current start.
func (f *Frame) Cap() int { return bufSize - f.off }

// Len is len(f.Data).
func (f *Frame) Len() int { return len(f.Data) }

// Clone returns a copy of the frame (bytes and metadata) from the same pool.
func (f *Frame) Clone() *Frame {
	c := f.pool.Get(len(f.Data))
	copy(c.Data, f.Data)
	buf, off, data, pool := c.buf, c.off, c.Data, c.pool
	*c = *f
	c.buf, c.off, c.Data, c.pool = buf, off, data, pool
	return c
}

// Put returns the frame to its pool. The caller must not use it afterwards.
func (f *Frame) Put() {
	if f.pool != nil {
		f.pool.put(f)
	}
}

// Pool is a free list of frames. It is not safe for concurrent use: each
// engine goroutine (or the single simulator goroutine) has its own, which is
// why it is a plain slice and not a sync.Pool. Frames may migrate between
// pools; Put returns a frame to the pool that made it, so a pool shared by
// goroutines must be wrapped by the caller.
type Pool struct {
	free []*Frame
	// Allocated counts frames ever created, for leak checks in tests.
	Allocated int
	// Outstanding counts frames handed out and not yet returned.
	Outstanding int
}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{} }

// Get returns a frame of length n at the default headroom with cleared
// metadata.
func (p *Pool) Get(n int) *Frame {
	var f *Frame
	if k := len(p.free); k > 0 {
		f = p.free[k-1]
		p.free[k-1] = nil
		p.free = p.free[:k-1]
	} else {
		f = &Frame{buf: new([bufSize]byte), pool: p}
		p.Allocated++
	}
	p.Outstanding++
	f.Reset(n)
	return f
}

func (p *Pool) put(f *Frame) {
	p.Outstanding--
	f.Data = nil
	f.Note = ""
	p.free = append(p.free, f)
}
