package swd

import (
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSeqpacketForward pushes 1500-byte frames through the daemon
// between two seqpacket peers (the NIC and inter-switch transport):
// reader, loop (engine, emulated wire), writer, in batches of 64. It
// reports delivered frames per second; allocations are per frame.
func BenchmarkSeqpacketForward(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(itoa(size)+"B", func(b *testing.B) {
			td := startTestDaemon(b, true)
			f := udpFrame(size-42, 0)
			batch := make([][]byte, 64)
			for i := range batch {
				batch[i] = f
			}
			var got atomic.Int64
			go func() {
				bufs := make([][]byte, 64)
				sizes := make([]int, 64)
				for i := range bufs {
					bufs[i] = make([]byte, 9600)
				}
				for {
					k, err := td.link[1].Read(bufs, sizes, 0)
					if err != nil {
						return
					}
					got.Add(int64(k))
				}
			}()
			b.SetBytes(int64(len(f)))
			b.ReportAllocs()
			b.ResetTimer()
			for sent := 0; sent < b.N; {
				n := min(len(batch), b.N-sent)
				k, err := td.link[0].Write(batch[:n], 0)
				if err != nil {
					b.Fatal(err)
				}
				sent += k
			}
			// Frames the transport could not take are dropped and
			// counted, so wait until nothing more arrives.
			for last := int64(-1); got.Load() != last && got.Load() < int64(b.N); {
				last = got.Load()
				time.Sleep(20 * time.Millisecond)
			}
			b.StopTimer()
			n := got.Load()
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
			b.ReportMetric(100*float64(int64(b.N)-n)/float64(b.N), "dropped-%")
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d [20]byte
	i := len(d)
	for n > 0 {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return string(d[i:])
}
