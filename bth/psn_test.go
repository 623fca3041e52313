package bth

import "testing"

func TestPSN(t *testing.T) {
	for _, tc := range []struct {
		a, b uint32
		diff int32
	}{
		{0, 0, 0},
		{1, 0, 1},
		{0, 1, -1},
		{0, PSNMask, 1}, // wrap: 0 follows 0xFFFFFF
		{PSNMask, 0, -1},
		{5, PSNMask - 4, 10},
		{PSNHalfWindow - 1, 0, PSNHalfWindow - 1},
		{PSNHalfWindow, 0, -PSNHalfWindow}, // exactly half-way counts as behind
		{0, PSNHalfWindow, -PSNHalfWindow},
		{PSNHalfWindow + 1, 0, -(PSNHalfWindow - 1)},
		{0x123456, 0x123400, 0x56},
	} {
		if got := PSNDiff(tc.a, tc.b); got != tc.diff {
			t.Errorf("PSNDiff(%#x, %#x) = %d, want %d", tc.a, tc.b, got, tc.diff)
		}
		want := 0
		if tc.diff < 0 {
			want = -1
		} else if tc.diff > 0 {
			want = 1
		}
		if got := PSNCompare(tc.a, tc.b); got != want {
			t.Errorf("PSNCompare(%#x, %#x) = %d, want %d", tc.a, tc.b, got, want)
		}
		if PSNBefore(tc.a, tc.b) != (tc.diff < 0) {
			t.Errorf("PSNBefore(%#x, %#x)", tc.a, tc.b)
		}
		if got := PSNAdd(tc.b, int(tc.diff)); got != tc.a {
			t.Errorf("PSNAdd(%#x, %d) = %#x, want %#x", tc.b, tc.diff, got, tc.a)
		}
	}
	if got := PSNAdd(PSNMask, 1); got != 0 {
		t.Errorf("PSNAdd wrap: %#x", got)
	}
	if got := PSNAdd(0, -1); got != PSNMask {
		t.Errorf("PSNAdd(0,-1): %#x", got)
	}
	if got := PSNAdd(3, 1<<24+2); got != 5 {
		t.Errorf("PSNAdd full turn: %#x", got)
	}
	if got := PSNDistance(PSNMask-1, 3); got != 5 {
		t.Errorf("PSNDistance: %d", got)
	}
}

func TestPSNInWindow(t *testing.T) {
	for _, tc := range []struct {
		psn, start, n uint32
		in            bool
	}{
		{10, 10, 1, true},
		{11, 10, 1, false},
		{9, 10, 100, false},
		{PSNMask, PSNMask - 1, 4, true},
		{0, PSNMask - 1, 4, true},
		{1, PSNMask - 1, 4, true},
		{2, PSNMask - 1, 4, false},
		{5, 5, 0, false},
		{12345, 7, 1 << 24, true},
		{0x800000, 0, PSNHalfWindow, false},
	} {
		if got := PSNInWindow(tc.psn, tc.start, tc.n); got != tc.in {
			t.Errorf("PSNInWindow(%#x, %#x, %d) = %v", tc.psn, tc.start, tc.n, got)
		}
	}
}
