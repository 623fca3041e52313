package bth

// PSN arithmetic. Packet sequence numbers are 24-bit counters that wrap
// (IBA 9.7.1). Whether one PSN is "before" another is decided by the signed
// distance between them: IBA 9.7.4 splits the PSN space into a half in front
// of the expected PSN (2^23 values: new or out-of-sequence packets) and a
// half behind it (duplicates).

const (
	// PSNMask masks a 24-bit PSN.
	PSNMask = 1<<24 - 1
	// PSNHalfWindow is half the PSN space, 2^23.
	PSNHalfWindow = 1 << 23
)

// PSNAdd returns psn + n modulo 2^24; n may be negative.
func PSNAdd(psn uint32, n int) uint32 { return uint32(int64(psn)+int64(n)) & PSNMask }

// PSNDiff returns the signed distance a − b modulo 2^24, in
// [−2^23, 2^23): positive when a is after b.
func PSNDiff(a, b uint32) int32 {
	// Shift the 24-bit difference into the top of an int32 and back: the
	// arithmetic shift sign-extends bit 23.
	return int32((a-b)<<8) >> 8
}

// PSNCompare returns −1, 0 or +1 as a is before, equal to or after b.
func PSNCompare(a, b uint32) int {
	switch d := PSNDiff(a, b); {
	case d < 0:
		return -1
	case d > 0:
		return 1
	}
	return 0
}

// PSNBefore reports whether a comes strictly before b.
func PSNBefore(a, b uint32) bool { return PSNDiff(a, b) < 0 }

// PSNDistance returns how many PSNs lie from start forward to psn, modulo
// 2^24 (0..2^24−1), without a sign.
func PSNDistance(start, psn uint32) uint32 { return (psn - start) & PSNMask }

// PSNInWindow reports whether psn lies in the n PSNs starting at start
// (start, start+1, ..., start+n−1, wrapping). n above 2^24 covers everything.
func PSNInWindow(psn, start, n uint32) bool { return PSNDistance(start, psn) < n }
