package sim

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// TestFlowGoodput: a flow that sends one message and stops shows two rates
// that differ: throughput over its own active time (first byte sent to
// last byte received, near the line rate) and goodput over the whole run.
// The Flows table showed only the first, so flows stuck early looked as
// fast as free ones (deadlock-ring: 37.3 Gb/s each, 1.9 MiB in 4 ms).
func TestFlowGoodput(t *testing.T) {
	const msg = 64 << 10
	s := pair(t, Options{Seed: 1, Duration: clock.Millisecond}, LinkConfig{Rate: 100e9, Delay: clock.Microsecond, MTU: 4200}, FabricRoCE,
		FlowConfig{Name: "f", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: msg}, Count: 1, Priority: 3})
	r, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	f := r.Flow("f")
	if f.RxBytes != msg {
		t.Fatalf("received %d bytes", f.RxBytes)
	}
	want := float64(msg) * 8 / clock.Millisecond.Seconds()
	if f.Goodput != want {
		t.Errorf("goodput %.4g b/s, want %.4g (received bytes over the 1 ms run)", f.Goodput, want)
	}
	if active := float64(msg) * 8 / (f.LastRx - f.Start).Seconds(); f.Throughput != active || f.Throughput < 50*f.Goodput {
		t.Errorf("throughput %.4g b/s, want %.4g (received bytes from the first byte sent to the last received)", f.Throughput, active)
	}
}
