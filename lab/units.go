package lab

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"unicode"

	"github.com/emufabric/emufabric/clock"
)

// Units in lab files. Rates are bits per second with decimal prefixes, as
// link speeds are quoted (100G = 100 000 000 000 b/s). Sizes are bytes with
// binary (KiB = 1024) or decimal (KB = kB = 1000) prefixes; a bare K, M or G
// is refused because "4K" is 4000 to a network engineer and 4096 to a
// programmer. Times need a unit (ps, ns, us or µs, ms, s); only 0 may be
// written without one.

// ParseRate parses a rate: "100G", "25Gbps", "40Gb/s", "800Mbit/s",
// "1.5T", or a bare number of bits per second. The result is > 0.
func ParseRate(s string) (uint64, error) {
	num, unit, err := splitNumber(s)
	if err != nil {
		return 0, err
	}
	u := unit
	for _, suffix := range []string{"bit/s", "bits/s", "bps", "b/s", "bit", "bits"} {
		if strings.HasSuffix(u, suffix) {
			u = strings.TrimSuffix(u, suffix)
			break
		}
	}
	var mult int64
	switch u {
	case "":
		mult = 1
	case "k", "K":
		mult = 1e3
	case "m", "M":
		mult = 1e6
	case "g", "G":
		mult = 1e9
	case "t", "T":
		mult = 1e12
	default:
		if strings.Contains(unit, "B") {
			return 0, fmt.Errorf("rate %q: rates are in bits per second (write 100G or 100Gbps, not bytes)", s)
		}
		return 0, fmt.Errorf("rate %q: unknown unit %q (use k, M, G or T, optionally followed by bps)", s, unit)
	}
	v, err := scale(num, mult)
	if err != nil {
		return 0, fmt.Errorf("rate %q: %v", s, err)
	}
	if v == 0 {
		return 0, fmt.Errorf("rate %q: must be greater than zero", s)
	}
	return v, nil
}

// ParseSize parses a size in bytes: "4096", "4KiB", "1.5MiB", "12MB", "9kB",
// "1500B".
func ParseSize(s string) (uint64, error) {
	num, unit, err := splitNumber(s)
	if err != nil {
		return 0, err
	}
	var mult int64
	switch unit {
	case "", "B":
		mult = 1
	case "KiB":
		mult = 1 << 10
	case "MiB":
		mult = 1 << 20
	case "GiB":
		mult = 1 << 30
	case "TiB":
		mult = 1 << 40
	case "kB", "KB":
		mult = 1e3
	case "MB":
		mult = 1e6
	case "GB":
		mult = 1e9
	case "TB":
		mult = 1e12
	case "k", "K", "M", "G", "T", "Ki", "Mi", "Gi":
		return 0, fmt.Errorf("size %q: ambiguous unit %q (write %sKiB for 1024-byte or %sKB for 1000-byte units)", s, unit, num, num)
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, KiB, MiB, GiB, KB, MB or GB)", s, unit)
	}
	v, err := scale(num, mult)
	if err != nil {
		return 0, fmt.Errorf("size %q: %v", s, err)
	}
	return v, nil
}

// ParseTime parses a duration: "1us", "1µs", "2.5ms", "100ns", "80ps",
// "1s", or "0".
func ParseTime(s string) (clock.Time, error) {
	num, unit, err := splitNumber(s)
	if err != nil {
		return 0, err
	}
	var mult int64
	switch unit {
	case "ps":
		mult = int64(clock.Picosecond)
	case "ns":
		mult = int64(clock.Nanosecond)
	case "us", "µs", "μs": // micro sign U+00B5 and Greek mu U+03BC
		mult = int64(clock.Microsecond)
	case "ms":
		mult = int64(clock.Millisecond)
	case "s":
		mult = int64(clock.Second)
	case "":
		if isZero(num) {
			return 0, nil
		}
		return 0, fmt.Errorf("time %q: needs a unit (ps, ns, us, ms or s)", s)
	case "m", "min", "h":
		return 0, fmt.Errorf("time %q: unit %q is too coarse for a simulation (use s, ms, us, ns or ps)", s, unit)
	default:
		return 0, fmt.Errorf("time %q: unknown unit %q (use ps, ns, us, ms or s)", s, unit)
	}
	v, err := scale(num, mult)
	if err != nil {
		return 0, fmt.Errorf("time %q: %v", s, err)
	}
	if v > uint64(clock.Never) {
		return 0, fmt.Errorf("time %q: too large", s)
	}
	return clock.Time(v), nil
}

// splitNumber splits "1.5 GiB" into "1.5" and "GiB".
func splitNumber(s string) (num, unit string, err error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return "", "", errors.New("empty value")
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.' || t[i] == '_') {
		i++
	}
	num = strings.ReplaceAll(t[:i], "_", "")
	unit = strings.TrimSpace(t[i:])
	if num == "" || strings.Count(num, ".") > 1 || num == "." {
		if strings.HasPrefix(t, "-") {
			return "", "", fmt.Errorf("%q: must not be negative", s)
		}
		return "", "", fmt.Errorf("%q: not a number with a unit", s)
	}
	for _, r := range unit {
		if !unicode.IsLetter(r) && r != '/' {
			return "", "", fmt.Errorf("%q: not a number with a unit", s)
		}
	}
	return num, unit, nil
}

// scale returns num × mult exactly, refusing fractions of the base unit and
// values that do not fit in 63 bits.
func scale(num string, mult int64) (uint64, error) {
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("%q is not a number", num)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, errors.New("not a whole number of the base unit")
	}
	n := r.Num()
	if !n.IsUint64() || n.Uint64() > math.MaxInt64 {
		return 0, errors.New("too large")
	}
	return n.Uint64(), nil
}

func isZero(num string) bool {
	return strings.Trim(num, "0.") == ""
}

// FormatTime renders a time the way ParseTime reads it back exactly, in
// the largest unit that divides it: "0", "2s", "300ms", "1500us", "80ps".
func FormatTime(t clock.Time) string {
	for _, u := range []struct {
		d    clock.Time
		name string
	}{{clock.Second, "s"}, {clock.Millisecond, "ms"}, {clock.Microsecond, "us"}, {clock.Nanosecond, "ns"}} {
		if t != 0 && t%u.d == 0 {
			return fmt.Sprintf("%d%s", t/u.d, u.name)
		}
	}
	if t == 0 {
		return "0"
	}
	return fmt.Sprintf("%dps", int64(t))
}

// FormatRate renders bits per second the way ParseRate reads them back
// exactly: "100G", "2.5G", "800M".
func FormatRate(bps uint64) string {
	units := []struct {
		div uint64
		sfx string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}
	for _, u := range units {
		if bps >= u.div && exact(bps, u.div) {
			return decimal(bps, u.div) + u.sfx
		}
	}
	return fmt.Sprintf("%d", bps)
}

// FormatSize renders bytes with binary prefixes where ParseSize reads them
// back exactly: "4KiB", "1.5MiB", "1500B".
func FormatSize(n uint64) string {
	units := []struct {
		div uint64
		sfx string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}}
	for _, u := range units {
		if n >= u.div && exact(n, u.div) {
			return decimal(n, u.div) + u.sfx
		}
	}
	return fmt.Sprintf("%dB", n)
}

// exact reports whether n/div has at most three decimals.
func exact(n, div uint64) bool {
	r := new(big.Rat).SetFrac(new(big.Int).SetUint64(n*1000), new(big.Int).SetUint64(div))
	return r.IsInt() && n < math.MaxUint64/1000
}

// decimal renders n/div, which exact found to have at most three
// decimals, in integers: through a float64 a rate above 2^53/1000 lost its
// last digits ("18000000000000001" became "18000000000000k").
func decimal(n, div uint64) string {
	s := fmt.Sprintf("%d.%03d", n/div, n%div*1000/div)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// Link rates the emulator runs: MinLinkRate to MaxLinkRate. Below a
// megabit a frame is seconds on the wire (a 9 KB frame at 1 kb/s is 72 s;
// at 1 b/s, `rate 1` where 1G was meant, 20 hours), and a frame already on
// the wire when the rate goes back up keeps the link for that long.
const (
	MinLinkRate = 1_000_000
	MaxLinkRate = 1_600_000_000_000 // 1.6T, the fastest Ethernet of IEEE 802.3dj
)

// CheckLinkRate says why a link cannot run at r bits per second, nil when
// it can.
func CheckLinkRate(r uint64) error {
	if r < MinLinkRate || r > MaxLinkRate {
		return fmt.Errorf("%s is out of the link rates the emulator runs, %s to %s (a bare number is bits per second)",
			FormatRate(r), FormatRate(MinLinkRate), FormatRate(MaxLinkRate))
	}
	return nil
}
