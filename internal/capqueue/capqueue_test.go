package capqueue

import (
	"strings"
	"testing"
	"time"
)

type rec struct {
	at   time.Time
	name string
}

func at(r *rec) time.Time { return r.at }

// A full data queue keeps control records, and the writer gets them back
// in time order, while running and at the end.
func TestOfferNextDrain(t *testing.T) {
	q := New(2, 2, at)
	t0 := time.Now()
	r := func(ms int, name string) rec { return rec{t0.Add(time.Duration(ms) * time.Millisecond), name} }
	for _, c := range []struct {
		r       rec
		control bool
		queued  bool
	}{
		{r(0, "d0"), false, true},
		{r(1, "d1"), false, true},
		{r(2, "d2"), false, false}, // data full: lost
		{r(3, "c3"), true, true},   // data full: the control queue
		{r(4, "c4"), true, true},
		{r(5, "c5"), true, false}, // both full
	} {
		if got := q.Offer(c.r, c.control); got != c.queued {
			t.Errorf("Offer(%s) = %v, want %v", c.r.name, got, c.queued)
		}
	}
	if n := q.Queued(); n != 4 {
		t.Errorf("Queued() = %d, want 4", n)
	}
	var got []string
	for range 2 {
		x, ok := q.Next()
		if !ok {
			t.Fatal("Next: nothing, with 4 queued")
		}
		got = append(got, x.name)
	}
	q.Offer(r(6, "d6"), false)
	for _, x := range q.Drain() {
		got = append(got, x.name)
	}
	if want := "d0 d1 c3 c4 d6"; strings.Join(got, " ") != want {
		t.Errorf("records %q, want %q", strings.Join(got, " "), want)
	}
	if _, ok := q.Next(); ok {
		t.Error("Next after Drain returned a record")
	}
}

// Wait returns true for a record, false once the loop closed the queues
// (after what was queued is taken) or a stop channel closed.
func TestWait(t *testing.T) {
	q := New(4, 4, at)
	go q.Offer(rec{time.Now(), "late"}, false)
	if !q.Wait(nil, nil) {
		t.Fatal("Wait: false with a record coming")
	}
	if x, ok := q.Next(); !ok || x.name != "late" {
		t.Fatalf("Next = %v %v", x, ok)
	}
	q.Offer(rec{time.Now(), "last"}, false)
	q.Close()
	if !q.Wait(nil, nil) {
		t.Fatal("Wait: false with a record queued before Close")
	}
	if x, _ := q.Next(); x.name != "last" {
		t.Fatalf("Next = %v", x)
	}
	if q.Wait(nil, nil) {
		t.Fatal("Wait: true on closed, empty queues")
	}
	stop := make(chan struct{})
	close(stop)
	if New(1, 1, at).Wait(nil, stop) {
		t.Fatal("Wait: true with stop closed")
	}
}
