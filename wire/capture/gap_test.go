package capture

import "testing"

// TestGapIn: the count of the daemons' "frames before this one not
// captured" note, wherever it sits in a comment; GapComment writes what
// GapIn reads.
func TestGapIn(t *testing.T) {
	for _, c := range []struct {
		comment string
		want    uint64
	}{
		{"rx", 0},
		{"", 0},
		{"rx; 1608 frames before this one not captured (slow reader)", 1608},
		{"tx prio 3; 2 frames before this one not captured (slow reader)", 2},
		{"7 frames before this one not captured (slow reader)", 7},
		{"rx: ECN-marked at queue depth 100; 12 frames before this one not captured (slow reader)", 12},
		{"frames before this one not captured", 0},
	} {
		if got := GapIn(c.comment); got != c.want {
			t.Errorf("GapIn(%q) = %d, want %d", c.comment, got, c.want)
		}
	}
	for _, c := range []struct {
		comment string
		n       uint64
		want    string
	}{
		{"rx", 2, "rx; 2 frames before this one not captured (slow reader)"},
		{"", 7, "7 frames before this one not captured (slow reader)"},
	} {
		if got := GapComment(c.comment, c.n); got != c.want || GapIn(got) != c.n {
			t.Errorf("GapComment(%q, %d) = %q", c.comment, c.n, got)
		}
	}
}
