package main

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/nicd"
)

// TestVerifyLatency: after a ping-pong the responder's buffer must hold
// the source as it was (but a WRITE's last byte, the message number), the
// requester's the responder's, and nothing beyond the message; each way
// of getting it wrong is named.
func TestVerifyLatency(t *testing.T) {
	const size = 100
	before := make([]byte, size)
	fillPattern(before, 7)
	pair := func(edit func(a, b []byte)) *nicd.Pair {
		a, b := make([]byte, 256), make([]byte, 256)
		copy(b, before)
		b[size-1] = 42 // the last message's number
		copy(a, b[:size])
		if edit != nil {
			edit(a, b)
		}
		return &nicd.Pair{ABuf: &nicd.Buffer{Bytes: a}, BBuf: &nicd.Buffer{Bytes: b}}
	}
	if err := verifyLatency(pair(nil), nic.IBV_WR_RDMA_WRITE, size, before); err != nil {
		t.Errorf("a good WRITE run: %v", err)
	}
	if err := verifyLatency(pair(nil), nic.IBV_WR_SEND, size, before); err == nil || !strings.Contains(err.Error(), "destination byte 99") {
		t.Errorf("a SEND run whose last byte changed: %v", err)
	}
	for _, c := range []struct {
		edit func(a, b []byte)
		want string
	}{
		{func(a, b []byte) { b[10] ^= 1; a[10] ^= 1 }, "destination byte 10"},
		{func(a, b []byte) { a[20] ^= 1 }, "requester's byte 20"},
		{func(a, b []byte) { b[size+3] = 9 }, "beyond the 100-byte message"},
	} {
		if err := verifyLatency(pair(c.edit), nic.IBV_WR_RDMA_WRITE, size, before); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}
