package lab

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A host named by its address, as perftest's client names its server.
func TestNodeOfAddress(t *testing.T) {
	root := t.TempDir()
	mk := func(lab string, nodes []NodeInfo) {
		dir := filepath.Join(root, lab)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(&LabInfo{Lab: lab, Nodes: nodes})
		for _, f := range []string{upInfoFile, "state.json"} {
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("one", []NodeInfo{{Name: "sw1", Kind: KindSwitch}, {Name: "h1", Kind: KindNIC, Iface: &IfaceInfo{Addr: "10.0.0.1/24"}},
		{Name: "h2", Kind: KindNIC, Iface: &IfaceInfo{Addr: "10.0.0.2/24"}}})
	for ref, want := range map[string]string{"10.0.0.2": "one/h2", "one/10.0.0.1": "one/h1", "h2": "h2", "one/h2": "one/h2"} {
		if got, err := nodeOfAddress(root, ref); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", ref, got, err, want)
		}
	}
	if _, err := nodeOfAddress(root, "10.0.0.9"); err == nil || !strings.Contains(err.Error(), "no host with address 10.0.0.9") {
		t.Errorf("an address no host has: %v", err)
	}
	mk("two", nil)
	if _, err := nodeOfAddress(root, "10.0.0.2"); err == nil || !strings.Contains(err.Error(), "say which, LAB/10.0.0.2") {
		t.Errorf("an address with two labs up: %v", err)
	}
	if got, err := nodeOfAddress(root, "one/10.0.0.2"); err != nil || got != "one/h2" {
		t.Errorf("one/10.0.0.2 with two labs up: %q, %v", got, err)
	}
}
