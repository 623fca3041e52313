package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/emufabric/emufabric/wire"
)

// TestHugeClaimAllocatesLittle: a record header that claims MaxRecordSize
// bytes followed by a few bytes of data must fail as truncated without the
// reader allocating the claim.
func TestHugeClaimAllocatesLittle(t *testing.T) {
	var f bytes.Buffer
	w, err := NewPcapWriter(&f, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var rh [16]byte
	binary.LittleEndian.PutUint32(rh[8:], MaxRecordSize)
	binary.LittleEndian.PutUint32(rh[12:], MaxRecordSize)
	f.Write(rh[:])
	f.Write(make([]byte, 24))
	data := f.Bytes()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := Open(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	err = r.Next(&rec)
	runtime.ReadMemStats(&after)
	var we *wire.Error
	if !errors.As(err, &we) || we.Reason != wire.ReasonTruncated {
		t.Fatalf("err = %v, want a truncation", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("reader allocated %d bytes for a %d-byte file", got, len(data))
	}
}

// TestShortReadIsUnexpectedEOF: a stream that ends inside a block (its
// writer stopped) reads as io.ErrUnexpectedEOF, still a wire.Error that
// says where; the whole stream ends with io.EOF.
func TestShortReadIsUnexpectedEOF(t *testing.T) {
	var b bytes.Buffer
	w, err := NewNgWriter(&b, "test")
	if err != nil {
		t.Fatal(err)
	}
	id, err := w.AddInterface(Interface{LinkType: LinkTypeEthernet, Name: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(id, time.Unix(1, 0), make([]byte, 200), "a comment"); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	whole := b.Bytes()
	next := func(data []byte) error {
		rd, err := Open(bytes.NewReader(data))
		if err != nil {
			return err
		}
		var rec Record
		for {
			if err := rd.Next(&rec); err != nil {
				return err
			}
		}
	}
	cut := next(whole[:len(whole)-50])
	var we *wire.Error
	if !errors.Is(cut, io.ErrUnexpectedEOF) || !errors.As(cut, &we) || we.Reason != wire.ReasonTruncated {
		t.Errorf("a stream cut inside its last block: %v", cut)
	}
	if err := next(whole); !errors.Is(err, io.EOF) {
		t.Errorf("the whole stream: %v", err)
	}
}
