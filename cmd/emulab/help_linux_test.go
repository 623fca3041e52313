package main

import "testing"

// TestBinDirHelpAgrees: up and demo find the daemons the same way (both go
// through lab.Up: --bin-dir, next to emulab, PATH, then a build from the
// checkout), so their --bin-dir help must say the same. up's once left out
// the build from the checkout, and a user of `go run ./cmd/emulab up` read
// that the daemons had to be on PATH.
func TestBinDirHelpAgrees(t *testing.T) {
	usage := func(name string) string {
		c, _, err := rootCmd.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		f := c.Flags().Lookup("bin-dir")
		if f == nil {
			t.Fatalf("%s has no --bin-dir", name)
		}
		return f.Usage
	}
	if up, demo := usage("up"), usage("demo"); up != demo {
		t.Errorf("--bin-dir help differs:\n  up:   %s\n  demo: %s", up, demo)
	}
}
