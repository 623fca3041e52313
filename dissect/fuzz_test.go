package dissect_test

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/emufabric/emufabric/dissect"
	"github.com/emufabric/emufabric/zoo"
)

// FuzzFrame feeds arbitrary bytes to the three frame decoders: none may
// panic, and whatever they return renders as valid JSON.
func FuzzFrame(f *testing.F) {
	for _, e := range zoo.All() {
		f.Add(uint8(e.Link), e.Data)
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		var o dissect.Object
		var err error
		switch zoo.Link(kind % 3) {
		case zoo.LinkEthernet:
			o, err = dissect.Ethernet(nil, data)
		case zoo.LinkIB:
			o, err = dissect.IB(nil, data)
		default:
			o, err = dissect.IBLink(nil, data)
		}
		if err != nil {
			o = o.Add("error", err.Error())
		}
		line := dissect.EncodeLine(o)
		if !json.Valid(line) {
			t.Fatalf("invalid JSON: %s", line)
		}
	})
}

// FuzzDecode feeds arbitrary capture files to Decode: errors are fine,
// panics and invalid JSON lines are not.
func FuzzDecode(f *testing.F) {
	var ng, pcap, erf bytes.Buffer
	if err := zoo.WritePcapNG(&ng, zoo.All()[:4]); err != nil {
		f.Fatal(err)
	}
	if err := zoo.WritePcap(&pcap, zoo.Ethernet()[:3]); err != nil {
		f.Fatal(err)
	}
	if err := zoo.WriteERF(&erf, zoo.IB()); err != nil {
		f.Fatal(err)
	}
	f.Add(ng.Bytes())
	f.Add(pcap.Bytes())
	f.Add(erf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		_ = dissect.Decode(bytes.NewReader(data), &out)
		for _, l := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if len(l) > 0 && !json.Valid(l) {
				t.Fatalf("invalid JSON line: %s", l)
			}
		}
	})
}

// BenchmarkDecodeZoo measures `emulab decode` over the whole zoo (a tool
// path: it allocates, this says how much).
func BenchmarkDecodeZoo(b *testing.B) {
	var ng bytes.Buffer
	if err := zoo.WritePcapNG(&ng, zoo.All()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(ng.Len()))
	for b.Loop() {
		if err := dissect.Decode(bytes.NewReader(ng.Bytes()), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
