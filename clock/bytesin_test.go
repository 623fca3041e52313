package clock

import "testing"

// TestBytesInAndSerializationTimeDoNotOverflow: rate x time in
// picoseconds passes 2^64 at 100G over 184 ms, and bits x 1e12 at 2.3 MB;
// the headroom of a 100 us link at 100G came out 202,720 bytes instead of
// 2.5 MB.
func TestBytesInAndSerializationTimeDoNotOverflow(t *testing.T) {
	for _, tc := range []struct {
		d    Time
		bps  uint64
		want uint64
	}{
		{200 * Microsecond, 100e9, 2_500_000},
		{2 * Second, 400e9, 100_000_000_000},
		{Microsecond, 100e9, 12_500},
		{0, 100e9, 0},
	} {
		if got := BytesIn(tc.d, tc.bps); got != tc.want {
			t.Errorf("BytesIn(%v, %d) = %d, want %d", tc.d, tc.bps, got, tc.want)
		}
	}
	if got, want := SerializationTime(1<<30, 8e9), Time(1<<30)*Nanosecond; got != want {
		t.Errorf("SerializationTime(1 GiB, 8G) = %v, want %v", got, want)
	}
	if got := SerializationTime(1500, 100e9); got != 120*Nanosecond {
		t.Errorf("SerializationTime(1500, 100G) = %v", got)
	}
	if got := SerializationTime(1, 3); got != Time(2_666_666_666_667) {
		t.Errorf("rounding up: %v", got)
	}
}
