package clock

import (
	"testing"
	"time"
)

func TestSerializationTime(t *testing.T) {
	for _, tc := range []struct {
		n    int
		bps  uint64
		want Time
	}{
		{1, 100e9, 80},                // 8 bits at 100 Gb/s = 80 ps
		{1, 400e9, 20},                // 20 ps
		{64, 100e9, 5120},             // 512 bits, one pause quantum: 5.12 ns
		{4170, 100e9, 333600},         // a 4 KiB RoCE frame
		{1500, 1e9, 12 * Microsecond}, // 12 µs at 1 Gb/s
		{1, 3, 2666666666667},         // rounds up: 8/3 s
		{9600, 1, 76800 * Second},     // no overflow for jumbo frames at 1 b/s
		{100, 0, Never},               // a link without rate never finishes
	} {
		if got := SerializationTime(tc.n, tc.bps); got != tc.want {
			t.Errorf("SerializationTime(%d, %d) = %d, want %d", tc.n, tc.bps, got, tc.want)
		}
	}
}

func TestConversions(t *testing.T) {
	if FromDuration(1500*time.Nanosecond) != 1500*Nanosecond {
		t.Fatal("FromDuration")
	}
	if (2500 * Picosecond).Duration() != 2*time.Nanosecond {
		t.Fatal("Duration truncates below a nanosecond")
	}
	if (1500 * Millisecond).Seconds() != 1.5 {
		t.Fatal("Seconds")
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		t    Time
		want string
	}{
		{0, "0ps"}, {20, "20ps"}, {5120, "5.12ns"}, {55 * Microsecond, "55us"},
		{275 * Microsecond, "275us"}, {9700 * Microsecond, "9.7ms"}, {2 * Second, "2s"},
		{Never, "never"}, {-3 * Microsecond, "-3us"},
	} {
		if got := tc.t.String(); got != tc.want {
			t.Errorf("%d.String() = %q, want %q", int64(tc.t), got, tc.want)
		}
	}
}
