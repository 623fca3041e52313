package capture

import (
	"strconv"
	"strings"
)

// A live capture never slows the daemon it taps: records a slow reader
// cannot take are dropped, and the next record that gets through says how
// many went before it in its comment. GapComment writes that note (after
// the record's own comment, if any) and GapIn reads the count back, so
// the daemons and the tools that merge their streams agree on one form.

const gapTail = " frames before this one not captured (slow reader)"

// GapComment appends the note for n lost records to comment.
func GapComment(comment string, n uint64) string {
	note := strconv.FormatUint(n, 10) + gapTail
	if comment == "" {
		return note
	}
	return comment + "; " + note
}

// GapIn returns the count of lost records a comment's note gives, 0 if it
// has none.
func GapIn(comment string) uint64 {
	i := strings.Index(comment, gapTail)
	if i < 0 {
		return 0
	}
	j := i
	for j > 0 && comment[j-1] >= '0' && comment[j-1] <= '9' {
		j--
	}
	n, err := strconv.ParseUint(comment[j:i], 10, 64)
	if err != nil {
		return 0
	}
	return n
}
