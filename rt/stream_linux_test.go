package rt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/emufabric/emufabric/frame"
	"golang.org/x/sys/unix"
)

// TestPortTAPStream: a Port on a TAP reads through ReadStream. Single
// datagrams and a UDP_SEGMENT send of 100 segments (more than one batch:
// the segments carry over to the next) all reach the loop in order, with
// their payloads; Close then stops the reader, which reports ErrClosed.
func TestPortTAPStream(t *testing.T) {
	goroutineLeakCheck(t)
	tap, ns, _ := testTAP(t, TAPConfig{MTU: 1500})
	if _, ok := any(tap).(streamReader); !ok {
		t.Fatal("TAP is not a streamReader")
	}
	fd := nsUDPSocket(t, ns, 0)
	loop := NewLoop(NewClock(1))
	got := make(chan []byte, 1024)
	p, err := loop.Attach(tap, PortConfig{Index: 2, Deliver: func(fs []*frame.Frame) {
		for _, f := range fs {
			// UDP to port 9993 only: skip the kernel's IPv6 chatter.
			if f.Len() > 42 && binary.BigEndian.Uint16(f.Data[12:]) == etherTypeIPv4 && binary.BigEndian.Uint16(f.Data[36:]) == 9993 {
				got <- bytes.Clone(f.Data[42:])
			}
			f.Put()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	go loop.Run()

	to := &unix.SockaddrInet4{Port: 9993, Addr: [4]byte{10, 77, 0, 2}}
	var want [][]byte
	for i := range 20 {
		b := []byte{byte(i), 's', 'i', 'n', 'g', 'l', 'e'}
		if err := unix.Sendto(fd, b, 0, to); err != nil {
			t.Fatal(err)
		}
		want = append(want, b)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_SEGMENT, 50); err == nil {
		payload := make([]byte, 100*50)
		for i := range payload {
			payload[i] = byte(i/50 + 1)
		}
		if err := unix.Sendto(fd, payload, 0, to); err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			want = append(want, payload[i*50:(i+1)*50])
		}
	} else {
		t.Logf("kernel without UDP GSO (%v): single datagrams only", err)
	}
	for i, w := range want {
		if b := <-got; !bytes.Equal(b, w) {
			t.Fatalf("datagram %d: %x, want %x", i, b, w)
		}
	}
	loop.Close()
	<-p.Done()
	if err := p.Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("reader stopped with %v, want ErrClosed", err)
	}
}
