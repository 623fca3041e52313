package interop_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/dissect"
	"github.com/emufabric/emufabric/zoo"
)

// TestScapyICRC: scapy computes the same ICRC as we do for every RoCEv2
// frame of the zoo. Over IPv4 with scapy's own BTH.compute_icrc; over IPv6,
// which scapy 2.5.0 cannot do, with upstream scapy's later recipe on scapy's
// layers (testdata/roce_icrc.py). Both find the ICRC without the Ethernet
// padding, as a receiver must.
func TestScapyICRC(t *testing.T) {
	needScapy(t)
	entries := zoo.Ethernet()
	p := writeFile(t, t.TempDir(), "zoo.pcap", zoo.WritePcap, entries)
	var res []struct {
		Frame  int
		ICRC   *string
		Method *string
	}
	if err := json.Unmarshal(runPython(t, "scapy_icrc.py", p), &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != len(entries) {
		t.Fatalf("scapy read %d frames, the file has %d", len(res), len(entries))
	}
	count := map[string]int{}
	for i, e := range entries {
		r := res[i]
		if e.Want.BTH == nil {
			if r.ICRC != nil {
				t.Errorf("%s: scapy computed an ICRC for a frame without BTH", e.Name)
			}
			continue
		}
		if r.ICRC == nil {
			t.Errorf("%s: scapy did not see a RoCEv2 packet", e.Name)
			continue
		}
		want := map[uint8]string{4: "scapy", 6: "upstream-ipv6-recipe"}[e.Want.IPVersion]
		if *r.Method != want {
			t.Errorf("%s: ICRC by %s, want %s", e.Name, *r.Method, want)
		}
		if ours := hex.EncodeToString(icrcBytes(e)); *r.ICRC != ours {
			t.Errorf("%s: scapy ICRC %s, ours %s", e.Name, *r.ICRC, ours)
		}
		count[*r.Method]++
	}
	if count["scapy"] == 0 || count["upstream-ipv6-recipe"] == 0 {
		t.Errorf("ICRCs checked: %v; want both IPv4 (scapy) and IPv6 (recipe) frames", count)
	}
	t.Logf("ICRCs equal on %d RoCEv2/IPv4 frames (scapy's compute_icrc) and %d RoCEv2/IPv6 frames (upstream recipe)",
		count["scapy"], count["upstream-ipv6-recipe"])
}

// TestScapyBuiltFrames: frames scapy builds (testdata/scapy_build.py)
// decode in ours to the values scapy was given.
func TestScapyBuiltFrames(t *testing.T) {
	needScapy(t)
	dir := t.TempDir()
	pcap, side := filepath.Join(dir, "scapy.pcap"), filepath.Join(dir, "scapy.json")
	runPython(t, "scapy_build.py", pcap, side)

	var meta struct {
		Frames []struct {
			Name   string
			Expect map[string]json.RawMessage
		}
	}
	b, err := os.ReadFile(side)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(pcap)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	if err := dissect.Decode(f, &out); err != nil {
		t.Fatalf("our decoder rejects a scapy frame: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(meta.Frames) {
		t.Fatalf("decoded %d frames, scapy built %d", len(lines), len(meta.Frames))
	}
	checked := 0
	for i, fr := range meta.Frames {
		var got map[string]any
		dec := json.NewDecoder(strings.NewReader(lines[i]))
		dec.UseNumber()
		if err := dec.Decode(&got); err != nil {
			t.Fatal(err)
		}
		for path, raw := range fr.Expect {
			var want any
			d := json.NewDecoder(bytes.NewReader(raw))
			d.UseNumber()
			if err := d.Decode(&want); err != nil {
				t.Fatal(err)
			}
			v, ok := lookup(got, path)
			if !ok {
				t.Errorf("frame %d (%s): our decode has no %s", i+1, fr.Name, path)
				continue
			}
			g, _ := json.Marshal(v)
			w, _ := json.Marshal(want)
			if !bytes.Equal(g, w) {
				t.Errorf("frame %d (%s): %s = %s, scapy built %s", i+1, fr.Name, path, g, w)
			}
			checked++
		}
	}
	t.Logf("%d scapy-built frames, %d fields equal in our decode", len(meta.Frames), checked)
}

// lookup follows a dotted path ("bth.psn") through decoded JSON.
func lookup(m map[string]any, path string) (any, bool) {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = o[k]; !ok {
			return nil, false
		}
	}
	return v, true
}
