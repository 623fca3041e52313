package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

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
