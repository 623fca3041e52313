package rt

import (
	"testing"
)

// TestShmTxBacklog: a ring link's backlog is what the writer published
// and the peer has not read (each frame a record: header and padding to a
// cache line), from either direction's writer, and 0 once closed.
func TestShmTxBacklog(t *testing.T) {
	a, b := shmPair(t)
	defer b.Close()
	if n := a.TxBacklog(); n != 0 {
		t.Fatalf("fresh link: backlog %d, want 0", n)
	}
	frames := [][]byte{make([]byte, 4154), make([]byte, 60)}
	if _, err := a.Write(frames, 0); err != nil {
		t.Fatal(err)
	}
	want := int(recordSize(4154) + recordSize(60))
	if n := a.TxBacklog(); n != want {
		t.Fatalf("two frames unread: backlog %d, want %d", n, want)
	}
	if !a.TryWrite(make([]byte, 100)) {
		t.Fatal("TryWrite refused with room in the ring")
	}
	want += int(recordSize(100))
	if n := a.TxBacklog(); n != want {
		t.Fatalf("after TryWrite: backlog %d, want %d", n, want)
	}
	if n := b.TxBacklog(); n != 0 {
		t.Fatalf("the reader's own send ring: backlog %d, want 0", n)
	}
	readAll(t, b, 3)
	if n := a.TxBacklog(); n != 0 {
		t.Fatalf("all read: backlog %d, want 0", n)
	}
	a.Close()
	if n := a.TxBacklog(); n != 0 {
		t.Fatalf("closed: backlog %d, want 0", n)
	}
}

// TestMaxBacklog: MaxBacklogTime of the link, with a floor of MinBacklog.
func TestMaxBacklog(t *testing.T) {
	for _, c := range []struct {
		rate uint64
		want int
	}{
		{2e9, 500_000},
		{10e9, 2_500_000},
		{400e9, 100_000_000},
		{100e6, MinBacklog},
	} {
		if got := MaxBacklog(c.rate); got != c.want {
			t.Errorf("MaxBacklog(%d) = %d, want %d", c.rate, got, c.want)
		}
	}
}
