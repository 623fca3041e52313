package lab

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

func TestParseRate(t *testing.T) {
	good := map[string]uint64{
		"100G": 100e9, "25Gbps": 25e9, "40Gb/s": 40e9, "800Mbit/s": 800e6, "1.5T": 1.5e12,
		"10k": 10e3, "100": 100, "2.5G": 2.5e9, "400 Gbps": 400e9, "1_000M": 1e9, "56gbit": 56e9,
	}
	for in, want := range good {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		"100GB":                 `rate "100GB": rates are in bits per second (write 100G or 100Gbps, not bytes)`,
		"0":                     `rate "0": must be greater than zero`,
		"-1G":                   `"-1G": must not be negative`,
		"":                      `empty value`,
		"G":                     `"G": not a number with a unit`,
		"1.2.3G":                `"1.2.3G": not a number with a unit`,
		"10X":                   `rate "10X": unknown unit "X" (use k, M, G or T, optionally followed by bps)`,
		"0.5":                   `rate "0.5": not a whole number of the base unit`,
		"1e3G":                  `"1e3G": not a number with a unit`,
		"99999999999999999999T": `rate "99999999999999999999T": too large`,
	}
	for in, want := range bad {
		if _, err := ParseRate(in); err == nil || err.Error() != want {
			t.Errorf("ParseRate(%q) error %v; want %s", in, err, want)
		}
	}
}

func TestParseSize(t *testing.T) {
	good := map[string]uint64{
		"4096": 4096, "4KiB": 4096, "1.5MiB": 1536 << 10, "12MB": 12e6, "9kB": 9000, "9KB": 9000,
		"1500B": 1500, "2GiB": 2 << 30, "0": 0, "0.5KiB": 512,
	}
	for in, want := range good {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		"4K":      `size "4K": ambiguous unit "K" (write 4KiB for 1024-byte or 4KB for 1000-byte units)`,
		"1M":      `size "1M": ambiguous unit "M" (write 1KiB for 1024-byte or 1KB for 1000-byte units)`,
		"4kb":     `size "4kb": unknown unit "kb" (use B, KiB, MiB, GiB, KB, MB or GB)`,
		"1.1B":    `size "1.1B": not a whole number of the base unit`,
		"4 bytes": `size "4 bytes": unknown unit "bytes" (use B, KiB, MiB, GiB, KB, MB or GB)`,
	}
	for in, want := range bad {
		if _, err := ParseSize(in); err == nil || err.Error() != want {
			t.Errorf("ParseSize(%q) error %v; want %s", in, err, want)
		}
	}
}

func TestParseTime(t *testing.T) {
	good := map[string]clock.Time{
		"1us": clock.Microsecond, "1µs": clock.Microsecond, "1μs": clock.Microsecond, "2.5ms": 2500 * clock.Microsecond,
		"100ns": 100 * clock.Nanosecond, "80ps": 80, "1s": clock.Second, "0": 0, "0.0": 0, "4.096us": 4096 * clock.Nanosecond,
	}
	for in, want := range good {
		if got, err := ParseTime(in); err != nil || got != want {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	bad := map[string]string{
		"10":       `time "10": needs a unit (ps, ns, us, ms or s)`,
		"1m":       `time "1m": unit "m" is too coarse for a simulation (use s, ms, us, ns or ps)`,
		"0.5ps":    `time "0.5ps": not a whole number of the base unit`,
		"1sec":     `time "1sec": unknown unit "sec" (use ps, ns, us, ms or s)`,
		"9999999s": `time "9999999s": too large`,
	}
	for in, want := range bad {
		if _, err := ParseTime(in); err == nil || err.Error() != want {
			t.Errorf("ParseTime(%q) error %v; want %s", in, err, want)
		}
	}
}

func TestFormatRoundTrip(t *testing.T) {
	for _, bps := range []uint64{100e9, 25e9, 2.5e9, 800e6, 1e3, 7} {
		if got, err := ParseRate(FormatRate(bps)); err != nil || got != bps {
			t.Errorf("rate %d -> %q -> %d %v", bps, FormatRate(bps), got, err)
		}
	}
	for _, n := range []uint64{4096, 1536 << 10, 1500, 12 << 20} {
		if got, err := ParseSize(FormatSize(n)); err != nil || got != n {
			t.Errorf("size %d -> %q -> %d %v", n, FormatSize(n), got, err)
		}
	}
}

func TestNaturalLess(t *testing.T) {
	for _, c := range []struct{ a, b string }{{"p2", "p10"}, {"p1", "p2"}, {"Ethernet0", "Ethernet8"}, {"p9", "p10"}, {"a", "ab"}} {
		if !naturalLess(c.a, c.b) || naturalLess(c.b, c.a) {
			t.Errorf("naturalLess(%q, %q)", c.a, c.b)
		}
	}
}

// TestFormatTime: the largest unit that divides, read back exactly.
func TestFormatTime(t *testing.T) {
	for _, c := range []struct {
		t    clock.Time
		want string
	}{
		{0, "0"}, {2 * clock.Second, "2s"}, {1300 * clock.Millisecond, "1300ms"}, {clock.Microsecond, "1us"},
		{1500 * clock.Nanosecond, "1500ns"}, {80, "80ps"}, {clock.Millisecond + 1, "1000000001ps"},
	} {
		got := FormatTime(c.t)
		if got != c.want {
			t.Errorf("FormatTime(%d) = %q, want %q", int64(c.t), got, c.want)
		}
		if back, err := ParseTime(got); err != nil || back != c.t {
			t.Errorf("ParseTime(%q) = %v, %v; want %d", got, back, err, int64(c.t))
		}
	}
}

// TestCheckLinkRate: a link runs from 1 Mb/s to 1.6 Tb/s; `rate: 1` (1 b/s,
// where 1G was meant) is a lab-file error naming the line and the field.
func TestCheckLinkRate(t *testing.T) {
	for _, c := range []struct {
		r  uint64
		ok bool
	}{{0, false}, {1, false}, {999_999, false}, {MinLinkRate, true}, {400e9, true}, {MaxLinkRate, true}, {MaxLinkRate + 1, false}} {
		if err := CheckLinkRate(c.r); (err == nil) != c.ok {
			t.Errorf("CheckLinkRate(%d) = %v, want ok %v", c.r, err, c.ok)
		}
	}
	y := `name: t
topology:
  nodes:
    s: {kind: switch}
    h: {kind: host}
  links:
    - endpoints: ["h:eth0", "s:p1"]
      rate: 1
`
	_, err := Parse("t.yaml", []byte(y))
	if err == nil || !strings.Contains(err.Error(), "t.yaml:8: topology.links[0].rate: 1 is out of the link rates") {
		t.Errorf("rate: 1 in a lab file: %v", err)
	}
}
