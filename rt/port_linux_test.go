package rt

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
)

// TestPortEcho wires two loops with a seqpacket pair. Loop A transmits
// frames; loop B's engine echoes each one back out of the port it came
// in; A's engine collects them. Run with -race: the engines and pools are
// only touched on their loop goroutines.
func TestPortEcho(t *testing.T) {
	goroutineLeakCheck(t)
	x, y, err := SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	testPortEcho(t, x, y)
}

// TestPortEchoShm is TestPortEcho over shared-memory rings: most frames take
// Transmit's direct path (written from the loop), the rest the writer's;
// all arrive, in order.
func TestPortEchoShm(t *testing.T) {
	goroutineLeakCheck(t)
	x, y := shmPair(t)
	pa, pb := testPortEcho(t, x, y)
	if pa.Counters.TxDirect.Load() == 0 || pb.Counters.TxDirect.Load() == 0 {
		t.Errorf("no frame took the direct path: A %d, B %d", pa.Counters.TxDirect.Load(), pb.Counters.TxDirect.Load())
	}
}

func testPortEcho(t *testing.T, x, y Link) (pa, pb *Port) {
	var err error
	la, lb := NewLoop(NewClock(1)), NewLoop(NewClock(1))
	t.Cleanup(la.Close)
	t.Cleanup(lb.Close)

	bSeen := 0 // B's engine state: loop B goroutine only
	var logMu sync.Mutex
	var logs []string
	logger := &Logger{Verbosef: func(format string, args ...any) {
		logMu.Lock()
		logs = append(logs, fmt.Sprintf(format, args...))
		logMu.Unlock()
	}}
	// B echoes with back-pressure: A paces its own writer, but B may read
	// a burst faster than its writer sends it back, and a drop there would
	// look like a lost frame (seen under CPU load).
	pb, err = lb.Attach(y, PortConfig{Index: 3, Name: "b3", Log: logger, Backpressure: true, Deliver: func(fs []*frame.Frame) {
		for _, f := range fs {
			if f.InPort != 3 || f.HeadAt == 0 || f.TailAt != f.HeadAt {
				t.Errorf("B got InPort %d HeadAt %v TailAt %v", f.InPort, f.HeadAt, f.TailAt)
			}
			bSeen++
			pb.Transmit(f) // ownership passes on; Transmit Puts it
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	got := make(chan []byte, n)
	pa, err = la.Attach(x, PortConfig{Index: 1, Deliver: func(fs []*frame.Frame) {
		for _, f := range fs {
			got <- bytes.Clone(f.Data)
			f.Put()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	go la.Run()
	go lb.Run()

	for i := 0; i < n; i += 50 {
		la.Post(func() {
			for j := i; j < i+50; j++ {
				f := la.Pool().Get(64 + j%1400)
				copy(f.Data, testFrame(j, len(f.Data)))
				pa.Transmit(f)
			}
		})
		// Let the writer drain so the bounded queue never drops: the test
		// checks delivery, not overload.
		for pa.Counters.TxFrames.Load() < uint64(i+50) {
			time.Sleep(time.Millisecond)
		}
	}
	for i := 0; i < n; i++ {
		select {
		case b := <-got:
			if !bytes.Equal(b, testFrame(i, 64+i%1400)) {
				t.Fatalf("frame %d corrupted or reordered (B's writer queue dropped %d)", i, pb.Counters.TxQueueDrops.Load())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d frames came back", i, n)
		}
	}
	if d := pa.Counters.TxQueueDrops.Load(); d != 0 {
		t.Errorf("%d queue drops", d)
	}
	// B's writer counts a frame after the write that let A read it: the
	// last frames may be back before B counted them.
	for deadline := time.Now().Add(30 * time.Second); pb.Counters.TxFrames.Load() < n && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if pa.Counters.RxFrames.Load() != n || pb.Counters.RxFrames.Load() != n || pb.Counters.TxFrames.Load() != n {
		t.Errorf("counters: A rx %d, B rx %d tx %d", pa.Counters.RxFrames.Load(), pb.Counters.RxFrames.Load(), pb.Counters.TxFrames.Load())
	}
	check := make(chan int)
	lb.Post(func() { check <- bSeen })
	if s := <-check; s != n {
		t.Errorf("B saw %d frames", s)
	}
	// Every frame handed to the engines went back to a pool: what is
	// outstanding is exactly the two reader batches per port.
	la.Post(func() { check <- la.Pool().Outstanding })
	if o := <-check; o != 2*x.BatchSize() {
		t.Errorf("pool A: %d frames outstanding, want %d", o, 2*x.BatchSize())
	}
	la.Close()
	select {
	case <-pa.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("port reader did not stop on Close")
	}
	lb.Close()
	logMu.Lock()
	defer logMu.Unlock()
	for _, want := range []string{"port b3: RoutineRead started", "port b3: RoutineRead stopped", "port b3: RoutineWrite started", "port b3: RoutineWrite stopped"} {
		if !slices.Contains(logs, want) {
			t.Errorf("log lacks %q: %q", want, logs)
		}
	}
	return pa, pb
}

// goroutineLeakCheck fails the test if goroutines it started outlive it
// (as wireguard-go's device tests do); it waits up to 10 s for them to end.
func goroutineLeakCheck(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		for i := 0; ; i++ {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if i == 1000 {
				buf := make([]byte, 1<<16)
				t.Errorf("%d goroutines leaked:\n%s", n-before, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// TestPortQueueFull: Transmit never blocks the loop; overflow is counted.
func TestPortQueueFull(t *testing.T) {
	x, y, err := SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	l := NewLoop(NewClock(1))
	defer l.Close()
	p, err := l.Attach(x, PortConfig{Deliver: func(fs []*frame.Frame) {}, TxQueue: 4,
		Pacer: NewPacer(l.Clock(), PacerConfig{Rate: 1000, Burst: -1})}) // 1 kb/s: nothing drains
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		p.Transmit(l.Pool().Get(1000))
	}
	// The writer holds at most the 4 buffers; the rest were dropped.
	if d := p.Counters.TxQueueDrops.Load(); d < 96 {
		t.Fatalf("drops %d, want >= 96", d)
	}
	if l.Pool().Outstanding != 2*x.BatchSize() {
		t.Fatalf("dropped frames not returned: %d outstanding", l.Pool().Outstanding)
	}
}

// BenchmarkPortSeqpacket measures frames/s through the whole real-time
// path: loop A's Transmit, writer, seqpacket, reader, loop B's Deliver.
func BenchmarkPortSeqpacket(b *testing.B) {
	x, y, err := SeqpacketPair()
	if err != nil {
		b.Fatal(err)
	}
	la, lb := NewLoop(NewClock(1)), NewLoop(NewClock(1))
	defer la.Close()
	defer lb.Close()
	recv := make(chan int, 1024)
	pa, _ := la.Attach(x, PortConfig{Deliver: func(fs []*frame.Frame) {}, TxQueue: 1024})
	lb.Attach(y, PortConfig{Deliver: func(fs []*frame.Frame) {
		for _, f := range fs {
			f.Put()
		}
		recv <- len(fs)
	}})
	go la.Run()
	go lb.Run()
	b.SetBytes(1500)
	b.ReportAllocs()
	start := time.Now()
	sent, got := 0, 0
	for got < b.N {
		if sent < b.N && sent-got < 512 {
			k := min(256, b.N-sent)
			la.Post(func() {
				for range k {
					pa.Transmit(la.Pool().Get(1500))
				}
			})
			sent += k
		}
		got += <-recv
	}
	b.ReportMetric(float64(got)/time.Since(start).Seconds(), "frames/s")
	if d := pa.Counters.TxQueueDrops.Load(); d != 0 {
		b.Fatalf("%d drops", d)
	}
}

// TestPortBackpressure: with Backpressure a full queue makes Transmit wait
// for the writer instead of dropping; every frame arrives.
func TestPortBackpressure(t *testing.T) {
	x, y, err := SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	l := NewLoop(NewClock(1))
	defer l.Close()
	// 1 Gb/s: the writer drains one 1000-byte frame every 8 us, far slower
	// than Transmit fills the 4-frame queue.
	p, err := l.Attach(x, PortConfig{Deliver: func(fs []*frame.Frame) {}, TxQueue: 4, Backpressure: true,
		Pacer: NewPacer(l.Clock(), PacerConfig{Rate: 1e9, Burst: -1})})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	got := make(chan int)
	go func() {
		bufs := [][]byte{make([]byte, 2000)}
		sizes := make([]int, 1)
		k := 0
		for k < n {
			m, err := y.Read(bufs, sizes, 0)
			if err != nil {
				break
			}
			k += m
		}
		got <- k
	}()
	for i := range n {
		f := l.Pool().Get(1000)
		copy(f.Data, testFrame(i, 1000))
		p.Transmit(f) // the test goroutine plays the loop (Run is not started)
	}
	select {
	case k := <-got:
		if k != n {
			t.Fatalf("received %d of %d", k, n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("frames did not arrive")
	}
	if d := p.Counters.TxQueueDrops.Load(); d != 0 {
		t.Fatalf("%d drops with backpressure", d)
	}
}

// pacedPair attaches a paced port on one end of a seqpacket pair and
// returns it with the other end.
func pacedPair(t testing.TB, cfg PacerConfig, txq int) (*Loop, *Port, Link) {
	x, y, err := SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	l := NewLoop(NewClock(1))
	p, err := l.Attach(x, PortConfig{Deliver: func(fs []*frame.Frame) {}, TxQueue: txq, Pacer: NewPacer(l.Clock(), cfg)})
	if err != nil {
		t.Fatal(err)
	}
	go l.Run()
	return l, p, y
}

// TestPortPacedDelay: frames through a paced link with a propagation
// delay all arrive, in order, without drops, while the delay line holds
// them.
func TestPortPacedDelay(t *testing.T) {
	l, p, y := pacedPair(t, PacerConfig{Rate: 10e9, Delay: 2 * clock.Millisecond, HeadBytes: 64}, 512)
	defer y.Close()
	defer l.Close()
	const n = 300
	l.Post(func() {
		for i := range n {
			f := l.Pool().Get(100 + i)
			copy(f.Data, testFrame(i, 100+i))
			p.Transmit(f)
		}
	})
	rb := make([][]byte, y.BatchSize())
	rs := make([]int, len(rb))
	for i := range rb {
		rb[i] = make([]byte, 2000)
	}
	for got := 0; got < n; {
		k, err := y.Read(rb, rs, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range k {
			if !bytes.Equal(rb[i][:rs[i]], testFrame(got, 100+got)) {
				t.Fatalf("frame %d corrupted or reordered", got)
			}
			got++
		}
	}
	if d := p.Counters.TxQueueDrops.Load(); d != 0 {
		t.Fatalf("%d drops", d)
	}
}

// BenchmarkPortPaced measures the rate a paced port achieves at 1 Gb/s
// with a 1 ms propagation delay (the delay line must not idle the link),
// receiver side, 1500-byte frames.
func BenchmarkPortPaced(b *testing.B) {
	l, p, y := pacedPair(b, PacerConfig{Rate: 1e9, Delay: clock.Millisecond, Burst: 2 * clock.Millisecond}, 1024)
	defer y.Close()
	defer l.Close()
	recv := make(chan int)
	go func() {
		rb := make([][]byte, y.BatchSize())
		rs := make([]int, len(rb))
		for i := range rb {
			rb[i] = make([]byte, 2000)
		}
		got := 0
		for got < b.N {
			k, err := y.Read(rb, rs, 0)
			if err != nil {
				break
			}
			got += k
		}
		recv <- got
	}()
	b.SetBytes(1500)
	start := time.Now()
	for sent := 0; sent < b.N; {
		k := min(64, b.N-sent)
		for p.Counters.TxFrames.Load()+1024-64 < uint64(sent) { // keep the queue from overflowing
			time.Sleep(100 * time.Microsecond)
		}
		l.Post(func() {
			for range k {
				p.Transmit(l.Pool().Get(1500))
			}
		})
		sent += k
	}
	got := <-recv
	el := time.Since(start)
	b.ReportMetric(float64(got)*1500*8/el.Seconds()/1e9, "Gb/s")
	if d := p.Counters.TxQueueDrops.Load(); d != 0 {
		b.Fatalf("%d drops", d)
	}
}
