package rt

import (
	"errors"
	"io"
)

// streamReader is a Link whose reader stays in one blocking call for its
// whole life and hands over batches through a callback (TAP.ReadStream):
// one read(2) that returns EAGAIN per wake-up instead of two.
//
// ReadStream fills bufs[i][offset:] and sizes[i] as Link.Read does and
// calls deliver(n) with each batch once the kernel's queue is empty or
// bufs is full; deliver takes the batch and returns the buffers for the
// next one, or false to stop, after which ReadStream returns nil. It
// returns an error satisfying errors.Is(err, ErrClosed) after Close.
type streamReader interface {
	ReadStream(bufs [][]byte, sizes []int, offset int, deliver func(n int) ([][]byte, []int, bool)) error
}

// readStream is RoutineRead over a streamReader: the same batches, handed
// to the loop from inside the link's read call.
func (p *Port) readStream(sr streamReader) {
	var b *rxBatch
	next := func() bool {
		select {
		case b = <-p.rxFree:
		case <-p.quit:
			return false
		}
		for i, f := range b.frames {
			b.bufs[i] = f.Data[:cap(f.Data)]
		}
		return true
	}
	if !next() {
		p.rxErr = ErrClosed
		return
	}
	err := sr.ReadStream(b.bufs, b.sizes, 0, func(n int) ([][]byte, []int, bool) {
		b.n = n
		select {
		case p.loop.rx <- b:
		case <-p.quit:
			return nil, nil, false
		}
		if !next() {
			return nil, nil, false
		}
		return b.bufs, b.sizes, true
	})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, ErrClosed) {
		err = ErrClosed // stopped by quit, or the link closed
	}
	p.rxErr = err
}
