package frame

import (
	"bytes"
	"testing"
)

func TestHeadroom(t *testing.T) {
	p := NewPool()
	f := p.Get(4)
	copy(f.Data, "data")
	if f.InPort != -1 || f.Cap() != MaxFrame {
		t.Fatalf("fresh frame: InPort %d cap %d", f.InPort, f.Cap())
	}
	h := f.Prepend(14)
	copy(h, bytes.Repeat([]byte{0xEE}, 14))
	if f.Len() != 18 || string(f.Data[14:]) != "data" || f.Cap() != MaxFrame+14 {
		t.Fatalf("after Prepend: len %d cap %d % x", f.Len(), f.Cap(), f.Data)
	}
	f.TrimFront(14)
	if string(f.Data) != "data" {
		t.Fatal("TrimFront")
	}
	f.SetLen(2)
	if string(f.Data) != "da" {
		t.Fatal("SetLen")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Prepend past the headroom must panic: it is a programming error")
		}
	}()
	f.Prepend(Headroom + 1)
}

func TestCloneAndPool(t *testing.T) {
	p := NewPool()
	f := p.Get(3)
	copy(f.Data, "abc")
	f.Priority, f.Flow, f.Note, f.Corrupt = 3, 7, "ecn", true
	c := f.Clone()
	c.Data[0] = 'X'
	if string(f.Data) != "abc" || string(c.Data) != "Xbc" {
		t.Fatal("clone shares bytes")
	}
	if c.Priority != 3 || c.Flow != 7 || c.Note != "ecn" || !c.Corrupt {
		t.Fatalf("clone metadata %+v", c)
	}
	if p.Outstanding != 2 || p.Allocated != 2 {
		t.Fatalf("outstanding %d allocated %d", p.Outstanding, p.Allocated)
	}
	f.Put()
	c.Put()
	if p.Outstanding != 0 {
		t.Fatalf("outstanding %d after Put", p.Outstanding)
	}
	g := p.Get(10)
	if p.Allocated != 2 || g.Note != "" || g.Corrupt || g.Priority != 0 || g.Len() != 10 {
		t.Fatalf("reused frame not reset: %+v (allocated %d)", g, p.Allocated)
	}
}

func BenchmarkPool(b *testing.B) {
	p := NewPool()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f := p.Get(1500)
		f.Prepend(14)
		f.Put()
	}
}
