package main

import "testing"

// TestMissedIn: the count of the daemons' "frames before this one not
// captured" note, wherever it sits in a comment.
func TestMissedIn(t *testing.T) {
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
		if got := missedIn(c.comment); got != c.want {
			t.Errorf("missedIn(%q) = %d, want %d", c.comment, got, c.want)
		}
	}
}
