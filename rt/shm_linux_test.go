package rt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/emufabric/emufabric/frame"
)

// shmPair connects two Shm links over a socketpair, as a listening daemon
// (ShmCreate) and a dialling one (ShmJoin) do over a socket file.
func shmPair(t testing.TB) (*Shm, *Shm) {
	t.Helper()
	a, b, err := SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		s   *Shm
		err error
	}
	c := make(chan res, 1)
	go func() {
		s, err := ShmCreate(a)
		c <- res{s, err}
	}()
	j, err := ShmJoin(b)
	r := <-c
	if err != nil || r.err != nil {
		t.Fatalf("join: %v; create: %v", err, r.err)
	}
	return r.s, j
}

func readAll(t *testing.T, l Link, want int) [][]byte {
	t.Helper()
	rb := make([][]byte, l.BatchSize())
	rs := make([]int, l.BatchSize())
	for i := range rb {
		rb[i] = make([]byte, 9600)
	}
	var got [][]byte
	for len(got) < want {
		n, err := l.Read(rb, rs, 0)
		if err != nil {
			t.Fatalf("Read after %d frames: %v", len(got), err)
		}
		for i := range n {
			got = append(got, bytes.Clone(rb[i][:rs[i]]))
		}
	}
	return got
}

// TestShmBackPressure writes two rings' worth in one call while the reader
// starts late: the writer waits for room, records wrap around the ring's
// end, nothing is lost or reordered.
func TestShmBackPressure(t *testing.T) {
	a, b := shmPair(t)
	defer a.Close()
	defer b.Close()
	const n = 10000 // about 8 MiB of records
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = testFrame(i, 60+i%1500)
		binary.BigEndian.PutUint32(bufs[i], uint32(i))
	}
	done := make(chan error, 1)
	go func() {
		sent, err := a.Write(bufs, 0)
		if err == nil && sent != n {
			err = errors.New("short write")
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // the writer fills the ring and sleeps; the test holds either way
	got := readAll(t, b, n)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if !bytes.Equal(got[i], bufs[i]) {
			t.Fatalf("frame %d differs (%d bytes, want %d)", i, len(got[i]), len(bufs[i]))
		}
	}
}

// TestShmWaitsCounted checks the wait counters (Waiter): a writer with
// more than a ring's worth waits for room (TxFull) while its reader has
// not started, and a reader of an empty ring sleeps (RxSleeps) until the
// writer's frame wakes it.
func TestShmWaitsCounted(t *testing.T) {
	a, b := shmPair(t)
	defer a.Close()
	defer b.Close()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not counted in 10 s", what)
			}
		}
	}
	if rx, tx := a.Waits(); rx != 0 || tx != 0 {
		t.Fatalf("a new link counts waits: rx sleeps %d, tx full %d", rx, tx)
	}

	// Two rings' worth of 4 KiB frames: the writer must find the ring
	// full, and nobody reads until it has said so.
	const n = 2 * shmRingBytes / 4096
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = testFrame(i, 4000)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.Write(bufs, 0)
		done <- err
	}()
	waitFor("writer's wait for room", func() bool { _, tx := a.Waits(); return tx >= 1 })
	readAll(t, b, n)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// The ring is empty now: a Read sleeps until a frame comes.
	rx0, _ := b.Waits()
	got := make(chan int, 1)
	go func() {
		bufs := [][]byte{make([]byte, 2048)}
		sizes := []int{0}
		n, err := b.Read(bufs, sizes, 0)
		if err != nil {
			t.Error(err)
		}
		got <- n
	}()
	waitFor("reader's sleep", func() bool { rx, _ := b.Waits(); return rx > rx0 })
	if _, err := a.Write([][]byte{testFrame(1, 100)}, 0); err != nil {
		t.Fatal(err)
	}
	if n := <-got; n != 1 {
		t.Fatalf("Read after its sleep: %d frames, want 1", n)
	}
	if _, tx := b.Waits(); tx != 0 {
		t.Errorf("b never wrote, yet counts %d waits for room", tx)
	}
}

// TestShmBothWays runs both directions at once, many small batches, the way
// a switch port and a NIC exchange data and acknowledgements.
func TestShmBothWays(t *testing.T) {
	a, b := shmPair(t)
	defer a.Close()
	defer b.Close()
	const n = 20000
	send := func(l Link, seed int) chan error {
		c := make(chan error, 1)
		go func() {
			for i := 0; i < n; i += 7 {
				var bufs [][]byte
				for k := i; k < min(i+7, n); k++ {
					f := testFrame(seed+k, 64+k%200)
					binary.BigEndian.PutUint32(f, uint32(k))
					bufs = append(bufs, f)
				}
				if _, err := l.Write(bufs, 0); err != nil {
					c <- err
					return
				}
			}
			c <- nil
		}()
		return c
	}
	ea, eb := send(a, 1), send(b, 2)
	check := func(l Link, seed int) {
		got := readAll(t, l, n)
		for k, f := range got {
			want := testFrame(seed+k, 64+k%200)
			binary.BigEndian.PutUint32(want, uint32(k))
			if !bytes.Equal(f, want) {
				t.Fatalf("seed %d frame %d differs", seed, k)
			}
		}
	}
	check(b, 1)
	check(a, 2)
	if err := <-ea; err != nil {
		t.Fatal(err)
	}
	if err := <-eb; err != nil {
		t.Fatal(err)
	}
}

// TestShmPeerClose: frames written before the peer closed are still read,
// then Read gives io.EOF and Write fails, without blocking.
func TestShmPeerClose(t *testing.T) {
	a, b := shmPair(t)
	defer b.Close()
	if _, err := a.Write([][]byte{testFrame(1, 100), testFrame(2, 200)}, 0); err != nil {
		t.Fatal(err)
	}
	a.Close()
	got := readAll(t, b, 2)
	if !bytes.Equal(got[1], testFrame(2, 200)) {
		t.Fatal("second frame differs")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !b.gone.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	_, err := b.Read([][]byte{make([]byte, 100)}, make([]int, 1), 0)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("Read after the peer closed: %v, want io.EOF", err)
	}
	if _, err := b.Write([][]byte{testFrame(3, 60)}, 0); err == nil {
		t.Fatal("Write to a closed peer succeeded")
	}
}

// TestShmPeerCloseWakesSleepers: a Read and a Write parked on the rings
// (nothing to read; a full ring) return when the peer closes.
func TestShmPeerCloseWakesSleepers(t *testing.T) {
	a, b := shmPair(t)
	defer b.Close()
	full := make([][]byte, shmRingBytes/9024+1)
	for i := range full {
		full[i] = testFrame(i, 9000)
	}
	werr := make(chan error, 1)
	go func() {
		_, err := b.Write(full, 0) // the last frame finds no room
		werr <- err
	}()
	c, d := shmPair(t)
	defer c.Close()
	rerr := make(chan error, 1)
	go func() {
		_, err := d.Read([][]byte{make([]byte, 100)}, make([]int, 1), 0)
		rerr <- err
	}()
	time.Sleep(20 * time.Millisecond)
	a.Close()
	d.Close()
	for name, ch := range map[string]chan error{"Write": werr, "Read": rerr} {
		select {
		case err := <-ch:
			if err == nil {
				t.Fatalf("%s returned no error", name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still blocked", name)
		}
	}
}

// TestShmCorruptRecord: a record length out of range (only a broken peer
// writes one) ends the link with an error and a count; the frames before
// it are delivered.
func TestShmCorruptRecord(t *testing.T) {
	for _, bad := range []uint32{0, 1 << 30, shmWrap - 1} {
		a, b := shmPair(t)
		if _, err := a.Write([][]byte{testFrame(1, 100), testFrame(2, 100), testFrame(3, 100)}, 0); err != nil {
			t.Fatal(err)
		}
		// The second record's length, as a broken peer would write it.
		binary.LittleEndian.PutUint32(a.tx.data[recordSize(100):], bad)
		rb := [][]byte{make([]byte, 200), make([]byte, 200), make([]byte, 200)}
		n, err := b.Read(rb, make([]int, 3), 0)
		if n != 1 || err == nil || b.Corrupt.Load() != 1 {
			t.Fatalf("length %#x: read %d frames, err %v, corrupt %d", bad, n, err, b.Corrupt.Load())
		}
		a.Close()
		b.Close()
	}
	// A head further ahead of the tail than the ring holds is an error,
	// not a read of stale records.
	a, b := shmPair(t)
	defer a.Close()
	defer b.Close()
	atomic.StoreUint32(a.tx.head, atomic.LoadUint32(a.tx.tail)+shmRingBytes+64)
	if _, err := b.Read([][]byte{make([]byte, 100)}, make([]int, 1), 0); err == nil {
		t.Fatal("a ring overrun was read as frames")
	}
}

// TestShmOversize: a frame larger than frame.MaxFrame is refused by Write
// and by TryWrite, and the link goes on.
func TestShmOversize(t *testing.T) {
	a, b := shmPair(t)
	defer a.Close()
	defer b.Close()
	if n, err := a.Write([][]byte{testFrame(1, 60), testFrame(2, 9700)}, 0); n != 1 || err == nil {
		t.Fatalf("Write of an oversize frame: %d, %v", n, err)
	}
	if a.TryWrite(testFrame(3, 9700)) {
		t.Fatal("TryWrite took an oversize frame")
	}
	if !a.TryWrite(testFrame(4, 60)) {
		t.Fatal("TryWrite refused a frame on an empty ring")
	}
	got := readAll(t, b, 2)
	if !bytes.Equal(got[0], testFrame(1, 60)) || !bytes.Equal(got[1], testFrame(4, 60)) {
		t.Fatal("frames differ")
	}
}

// TestShmJoinNotShm: ShmJoin on a socket whose peer sends an ordinary frame
// fails with a message, and closes the socket.
func TestShmJoinNotShm(t *testing.T) {
	a, b, err := SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Write([][]byte{testFrame(1, 60)}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := ShmJoin(b); err == nil {
		t.Fatal("joined a link that sent a frame")
	}
	a.Close()
	c, d, err := SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := ShmJoin(d); err == nil {
		t.Fatal("joined a closed peer")
	}
}

// FuzzShmDrain hands the reader ring contents and positions a broken or
// hostile peer could publish: it must deliver frames that fit, or end the
// link with an error, never read outside the ring or panic.
func FuzzShmDrain(f *testing.F) {
	rec := func(n int) []byte {
		b := make([]byte, recordSize(n))
		binary.LittleEndian.PutUint32(b, uint32(n))
		return b
	}
	f.Add(rec(60), uint32(0), recordSize(60))
	f.Add(append(rec(100), rec(9600)...), uint32(0), recordSize(100)+recordSize(9600))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint32(shmRingBytes-64), uint32(shmRingBytes+64))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint32(0), uint32(64))
	f.Add(rec(1<<20), uint32(0), uint32(1<<21))
	f.Add([]byte{}, uint32(5), uint32(3))
	a, b := shmPair(f)
	defer a.Close()
	defer b.Close()
	bufs := make([][]byte, 8)
	for i := range bufs {
		bufs[i] = make([]byte, 1600) // smaller than a jumbo: ErrFrameTooLarge too
	}
	sizes := make([]int, len(bufs))
	f.Fuzz(func(t *testing.T, data []byte, tail, head uint32) {
		// The peer's bytes at the tail's place in the ring.
		off := int(tail % shmRingBytes)
		n := copy(a.tx.data[off:], data)
		copy(a.tx.data, data[n:])
		k, err := b.drain(bufs, sizes, 16, head, tail)
		if k < 0 || k > len(bufs) {
			t.Fatalf("%d frames", k)
		}
		for i := range k {
			if sizes[i] <= 0 || sizes[i] > len(bufs[i])-16 {
				t.Fatalf("frame %d: size %d", i, sizes[i])
			}
		}
		_ = err
	})
}

// TestShmCreateNotShm: ShmCreate toward a peer that does not take the
// rings (a plain seqpacket end answering with a frame, or closing) fails
// instead of reporting a link up whose traffic nobody reads.
func TestShmCreateNotShm(t *testing.T) {
	a, b, err := SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	go b.Write([][]byte{testFrame(1, 60)}, 0)
	if _, err := ShmCreate(a); err == nil {
		t.Fatal("created rings for a peer that answered with a frame")
	}
	c, d, err := SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	go d.Close()
	if _, err := ShmCreate(c); err == nil {
		t.Fatal("created rings for a peer that closed")
	}
}

// TestShmSealed: a joiner refuses ring memory that is not sealed at its
// size (a peer's truncation would turn our next access into a SIGBUS), so
// every shmPair of the other tests proves ShmCreate seals it; sealed, the
// memory refuses a resize.
func TestShmSealed(t *testing.T) {
	fd, err := unix.MemfdCreate("x", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, 2*shmRingSize); err != nil {
		t.Fatal(err)
	}
	// An unsealed memfd of the right size, sent as a creator would.
	x, y, err := SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var efds [4]int
	for i := range efds {
		if efds[i], err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(efds[i])
	}
	if err := sendSetup(x, unix.UnixRights(fd, efds[0], efds[1], efds[2], efds[3])); err != nil {
		t.Fatal(err)
	}
	if _, err := ShmJoin(y); err == nil || !strings.Contains(err.Error(), "sealed") {
		t.Fatalf("joined unsealed memory: %v", err)
	}
	// And the creator's memory refuses a resize.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, shmSeals); err != nil {
		t.Fatal(err)
	}
	if err := unix.Ftruncate(fd, 4096); err == nil {
		t.Fatal("sealed memory was truncated")
	}
}

// TestShmZeroLength: an empty frame is refused by the writer (a reader
// would take its record for corruption).
func TestShmZeroLength(t *testing.T) {
	a, b := shmPair(t)
	defer a.Close()
	defer b.Close()
	if a.TryWrite(nil) {
		t.Fatal("TryWrite took an empty frame")
	}
	if n, err := a.Write([][]byte{testFrame(1, 60), {}}, 0); n != 1 || err == nil {
		t.Fatalf("Write of an empty frame: %d, %v", n, err)
	}
	if got := readAll(t, b, 1); !bytes.Equal(got[0], testFrame(1, 60)) || b.Corrupt.Load() != 0 {
		t.Fatal("the frame before the empty one was not delivered intact")
	}
}

// TestShmOverStop: a setup waiting for a silent peer gives up when stop
// is closed (a daemon closing), not after the setup timeout.
func TestShmOverStop(t *testing.T) {
	for _, accepted := range []bool{true, false} {
		a, b, err := SeqpacketPair()
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		errc := make(chan error, 1)
		go func() {
			_, err := ShmOver(a, accepted, stop)
			errc <- err
		}()
		time.Sleep(20 * time.Millisecond) // let it wait; the test holds either way
		close(stop)
		select {
		case err := <-errc:
			if err == nil {
				t.Fatalf("accepted %v: set up without a peer", accepted)
			}
		case <-time.After(shmSetupTimeout / 2):
			t.Fatalf("accepted %v: stop did not end the setup", accepted)
		}
		b.Close()
	}
}

// TestShmCorruptCountedByPort: a port whose ring turns out corrupt stops
// with its error and counts it (RxLinkErrors), after delivering the good
// frames before the bad record.
func TestShmCorruptCountedByPort(t *testing.T) {
	a, b := shmPair(t)
	defer a.Close()
	if _, err := a.Write([][]byte{testFrame(1, 100), testFrame(2, 100)}, 0); err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(a.tx.data[recordSize(100):], 1<<30)
	l := NewLoop(NewClock(1))
	defer l.Close()
	got := make(chan int, 4)
	p, err := l.Attach(b, PortConfig{Deliver: func(fs []*frame.Frame) {
		for _, f := range fs {
			got <- len(f.Data)
			f.Put()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	go l.Run()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the port did not stop on a corrupt ring")
	}
	if p.Err() == nil || p.Counters.RxLinkErrors.Load() != 1 || b.Corrupt.Load() != 1 {
		t.Fatalf("err %v, rx link errors %d, corrupt %d", p.Err(), p.Counters.RxLinkErrors.Load(), b.Corrupt.Load())
	}
	select {
	case n := <-got:
		if n != 100 {
			t.Fatalf("delivered %d bytes", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the frame before the bad record was not delivered")
	}
}

// TestShmPingPongWakeups: single frames bounced between the two ends, so
// that every hop puts a reader to sleep and wakes it (the consSleeping
// handshake and ring.wait), many thousands of times. A lost wake-up
// leaves both ends asleep with a frame in a ring; a wait that skipped its
// first read of the eventfd did that within some 50,000 round trips
// (Go's poller forgets a readiness it saw before each RawConn.Read).
func TestShmPingPongWakeups(t *testing.T) {
	a, b := shmPair(t)
	defer a.Close()
	defer b.Close()
	rounds := 100_000
	if testing.Short() {
		rounds = 10_000
	}
	var hops [2]atomic.Int64
	echo := func(l *Shm, side int, serve bool, done chan<- error) {
		rb, rs := [][]byte{make([]byte, 64)}, []int{0}
		wb := [][]byte{make([]byte, 60)}
		if serve {
			if _, err := l.Write(wb, 0); err != nil {
				done <- err
				return
			}
		}
		for range rounds {
			if _, err := l.Read(rb, rs, 0); err != nil {
				done <- err
				return
			}
			if _, err := l.Write(wb, 0); err != nil {
				done <- err
				return
			}
			hops[side].Add(1)
		}
		done <- nil
	}
	done := make(chan error, 2)
	go echo(a, 0, true, done)
	go echo(b, 1, false, done)
	last := [2]int64{-1, -1}
	for finished := 0; finished < 2; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished++
		case <-time.After(10 * time.Second):
			now := [2]int64{hops[0].Load(), hops[1].Load()}
			if now == last {
				t.Fatalf("no hop in 10 s after %d and %d round trips: a wake-up was lost", now[0], now[1])
			}
			last = now
		}
	}
}

// TestShmPeerState: each end may announce that it was set down or up; the
// other hears it (OnPeerState, PeerUp) and the link carries on, frames
// included.
func TestShmPeerState(t *testing.T) {
	a, b := shmPair(t)
	defer a.Close()
	defer b.Close()
	heard := make(chan bool, 4)
	b.OnPeerState(func(st PeerState) { heard <- st.Up })
	if !b.PeerUp() {
		t.Fatal("a new link's peer is not up")
	}
	for _, up := range []bool{false, true} {
		if err := a.SetState(up); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-heard:
			if got != up || b.PeerUp() != up {
				t.Errorf("announced %v: heard %v, PeerUp %v", up, got, b.PeerUp())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("announcement %v not heard", up)
		}
	}
	// The link still works both ways.
	if _, err := a.Write([][]byte{[]byte("after the announcements")}, 0); err != nil {
		t.Fatal(err)
	}
	bufs, sizes := [][]byte{make([]byte, 64)}, []int{0}
	if n, err := b.Read(bufs, sizes, 0); err != nil || n != 1 || string(bufs[0][:sizes[0]]) != "after the announcements" {
		t.Fatalf("read after the announcements: %d %v", n, err)
	}
}
