package lab

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/emufabric/emufabric/clock"
)

// mapping is one YAML mapping being decoded: values from viper, keys as
// written from the position index. Reading a key marks it used; done()
// reports the keys nobody read (typos).
type mapping struct {
	d    *decoder
	path string
	vals map[string]any // lower-case keys
	keys []string       // as written, file order
	used map[string]bool
}

// mapping returns the mapping at path, or nil (with an error) when v is not
// one. A missing or null value is an empty mapping.
func (d *decoder) mapping(path string, v any) *mapping {
	m := &mapping{d: d, path: path, used: make(map[string]bool), vals: make(map[string]any)}
	switch t := v.(type) {
	case nil:
	case map[string]any:
		for k, x := range t {
			m.vals[strings.ToLower(k)] = x
		}
	default:
		d.errorf(path, "expected a mapping (key: value), got %s", describe(v))
		return nil
	}
	m.keys = d.pos.keys(path)
	if m.keys == nil {
		// Not in the index (should not happen for YAML): use viper's keys.
		for k := range m.vals {
			m.keys = append(m.keys, k)
		}
		sort.Strings(m.keys)
	}
	return m
}

// get returns the value of key and its field path; ok is false when the key
// is not written.
func (m *mapping) get(key string) (v any, path string, ok bool) {
	low := strings.ToLower(key)
	m.used[low] = true
	for _, k := range m.keys {
		if strings.ToLower(k) == low {
			return m.vals[low], join(m.path, k), true
		}
	}
	return nil, join(m.path, key), false
}

// entry is one key of a mapping of named entries (nodes, BUFFER_POOL, ...).
type entry struct {
	key  string // as written
	path string
	val  any
}

// entries returns every key of the mapping in file order, marking all used.
func (m *mapping) entries() []entry {
	out := make([]entry, 0, len(m.keys))
	for _, k := range m.keys {
		low := strings.ToLower(k)
		m.used[low] = true
		out = append(out, entry{key: k, path: join(m.path, k), val: m.vals[low]})
	}
	return out
}

// done reports keys not read by the decoder, suggesting the closest known
// key: a misspelt key must never be silently ignored.
func (m *mapping) done(known ...string) {
	for _, k := range m.keys {
		if m.used[strings.ToLower(k)] {
			continue
		}
		if s := didYouMean(k, known); s != "" {
			m.d.errorf(join(m.path, k), "unknown key %q (did you mean %s?)", k, s)
		} else if len(known) > 0 {
			m.d.errorf(join(m.path, k), "unknown key %q (known keys: %s)", k, strings.Join(known, ", "))
		} else {
			m.d.errorf(join(m.path, k), "unknown key %q", k)
		}
	}
}

// suggest returns what k most likely stands for among known (case
// folded), at most two: the nearest key one edit away, and the shortest
// key that begins with k ("ip": ib, one letter off, or ipv4, cut short);
// without either, the nearest within 2 edits, or 3 for a key of 8 letters
// or more ("cut_thru": cut_through). A key far from all gets none: the
// caller lists the known ones instead.
func suggest(k string, known []string) []string {
	lk := strings.ToLower(k)
	best, bestD := "", 99
	for _, c := range known {
		if dist := editDistance(lk, strings.ToLower(c)); dist < bestD {
			best, bestD = c, dist
		}
	}
	var out []string
	if bestD <= 1 {
		out = append(out, best)
	}
	if len(lk) >= 2 {
		pre := ""
		for _, c := range known {
			if lc := strings.ToLower(c); lc != lk && strings.HasPrefix(lc, lk) && (pre == "" || len(c) < len(pre)) {
				pre = c
			}
		}
		if pre != "" && pre != best {
			out = append(out, pre)
		}
	}
	limit := 2
	if len(lk) >= 8 {
		limit = 3
	}
	if len(out) == 0 && bestD <= limit {
		out = append(out, best)
	}
	return out
}

// closest is suggest's first answer, "" for none.
func closest(k string, known []string) string {
	if s := suggest(k, known); len(s) > 0 {
		return s[0]
	}
	return ""
}

// didYouMean is suggest's answers quoted for a message: "ib" or "ipv4";
// "" for none.
func didYouMean(k string, known []string) string {
	s := suggest(k, known)
	for i := range s {
		s[i] = strconv.Quote(s[i])
	}
	return strings.Join(s, " or ")
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "nothing"
	case string:
		return fmt.Sprintf("the string %q", t)
	case bool:
		return fmt.Sprintf("the boolean %v", t)
	case int, int64, uint64, float64:
		return fmt.Sprintf("the number %v", t)
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("a %T", v)
}

// scalarString renders a scalar as the user wrote it, for the unit parsers
// (YAML turns `100` into an int and `1.5` into a float).
func scalarString(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case int:
		return strconv.Itoa(t), true
	case int64:
		return strconv.FormatInt(t, 10), true
	case uint64:
		return strconv.FormatUint(t, 10), true
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return "", false
		}
		return strconv.FormatFloat(t, 'f', -1, 64), true
	}
	return "", false
}

func (d *decoder) str(path string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		d.errorf(path, "expected a string, got %s", describe(v))
	}
	return s, ok
}

// enum reads one of the allowed strings (case-insensitive, returned in the
// allowed spelling).
func (d *decoder) enum(path string, v any, allowed ...string) (string, bool) {
	s, ok := scalarString(v)
	if !ok {
		d.errorf(path, "expected one of %s, got %s", strings.Join(allowed, ", "), describe(v))
		return "", false
	}
	for _, a := range allowed {
		if strings.EqualFold(s, a) {
			return a, true
		}
	}
	if c := didYouMean(s, allowed); c != "" {
		d.errorf(path, "%q is not one of %s (did you mean %s?)", s, strings.Join(allowed, ", "), c)
	} else {
		d.errorf(path, "%q is not one of %s", s, strings.Join(allowed, ", "))
	}
	return "", false
}

func (d *decoder) boolean(path string, v any) (bool, bool) {
	b, ok := v.(bool)
	if !ok {
		d.errorf(path, "expected true or false, got %s", describe(v))
	}
	return b, ok
}

// integer reads a whole number in [lo, hi]; numeric strings ("3") are
// accepted because SONiC writes numbers as strings.
func (d *decoder) integer(path string, v any, lo, hi int64) (int64, bool) {
	var n int64
	switch t := v.(type) {
	case int:
		n = int64(t)
	case int64:
		n = t
	case uint64:
		if t > math.MaxInt64 {
			d.errorf(path, "%d is out of range [%d, %d]", t, lo, hi)
			return 0, false
		}
		n = int64(t)
	case float64:
		if t != math.Trunc(t) || math.IsInf(t, 0) || math.IsNaN(t) || math.Abs(t) > 1<<53 {
			d.errorf(path, "expected a whole number, got %v", t)
			return 0, false
		}
		n = int64(t)
	case string:
		x, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
		if err != nil {
			d.errorf(path, "expected a whole number, got %q", t)
			return 0, false
		}
		n = x
	default:
		d.errorf(path, "expected a whole number, got %s", describe(v))
		return 0, false
	}
	if n < lo || n > hi {
		d.errorf(path, "%d is out of range [%d, %d]", n, lo, hi)
		return 0, false
	}
	return n, true
}

// number reads a real number in [lo, hi].
func (d *decoder) number(path string, v any, lo, hi float64) (float64, bool) {
	var f float64
	switch t := v.(type) {
	case int:
		f = float64(t)
	case int64:
		f = float64(t)
	case uint64:
		f = float64(t)
	case float64:
		f = t
	case string:
		x, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if err != nil {
			d.errorf(path, "expected a number, got %q", t)
			return 0, false
		}
		f = x
	default:
		d.errorf(path, "expected a number, got %s", describe(v))
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		// YAML's .nan and .inf: a range of ±1.8e308 would say nothing.
		d.errorf(path, "expected a finite number, got %v", f)
		return 0, false
	}
	if f < lo || f > hi {
		d.errorf(path, "%v is out of range [%v, %v]", f, lo, hi)
		return 0, false
	}
	return f, true
}

// rate reads a rate ("100G"); a bare number is bits per second.
func (d *decoder) rate(path string, v any) (uint64, bool) {
	s, ok := scalarString(v)
	if !ok {
		d.errorf(path, "expected a rate such as 100G or 25Gbps, got %s", describe(v))
		return 0, false
	}
	r, err := ParseRate(s)
	if err != nil {
		d.errorf(path, "%v", err)
		return 0, false
	}
	return r, true
}

// size reads a size ("4KiB"); a bare number is bytes.
func (d *decoder) size(path string, v any) (uint64, bool) {
	s, ok := scalarString(v)
	if !ok {
		d.errorf(path, "expected a size such as 4096 or 4KiB, got %s", describe(v))
		return 0, false
	}
	n, err := ParseSize(s)
	if err != nil {
		d.errorf(path, "%v", err)
		return 0, false
	}
	return n, true
}

// duration reads a time ("1us"); only 0 may be written without a unit.
func (d *decoder) duration(path string, v any) (clock.Time, bool) {
	s, ok := scalarString(v)
	if !ok {
		d.errorf(path, "expected a time such as 10us or 1ms, got %s", describe(v))
		return 0, false
	}
	t, err := ParseTime(s)
	if err != nil {
		d.errorf(path, "%v", err)
		return 0, false
	}
	return t, true
}

// msDuration reads a SONiC time field: a bare number is milliseconds (as in
// PFC_WD), a string with a unit is that time.
func (d *decoder) msDuration(path string, v any) (clock.Time, bool) {
	switch t := v.(type) {
	case int, int64, uint64:
		n, ok := d.integer(path, t, 0, math.MaxInt64/int64(clock.Millisecond))
		return clock.Time(n) * clock.Millisecond, ok
	case string:
		if n, err := strconv.ParseUint(strings.TrimSpace(t), 10, 32); err == nil {
			return clock.Time(n) * clock.Millisecond, true
		}
	}
	return d.duration(path, v)
}

// probability reads a probability: a number in [0, 1] or a percentage
// string ("0.5%").
func (d *decoder) probability(path string, v any) (float64, bool) {
	if s, ok := v.(string); ok && strings.HasSuffix(strings.TrimSpace(s), "%") {
		f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 100 {
			d.errorf(path, "%q is not a percentage in [0%%, 100%%]", s)
			return 0, false
		}
		return f / 100, true
	}
	return d.number(path, v, 0, 1)
}

// list returns v as a list; a missing value is an empty list.
func (d *decoder) list(path string, v any) ([]any, bool) {
	switch t := v.(type) {
	case nil:
		return nil, true
	case []any:
		return t, true
	}
	d.errorf(path, "expected a list, got %s", describe(v))
	return nil, false
}

// idSet reads a set of 0..max ids: "3", "3,4", "0-2,5", a number or a list
// of numbers. It returns a bit mask.
func (d *decoder) idSet(path string, v any, max int) (uint64, bool) {
	var parts []string
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			s, ok := scalarString(x)
			if !ok {
				d.errorf(path, "expected numbers 0..%d, got %s", max, describe(x))
				return 0, false
			}
			parts = append(parts, s)
		}
	default:
		s, ok := scalarString(v)
		if !ok {
			d.errorf(path, "expected numbers 0..%d such as \"3,4\" or \"0-2\", got %s", max, describe(v))
			return 0, false
		}
		s = strings.TrimSpace(s)
		if s != "" {
			parts = strings.Split(s, ",")
		}
	}
	mask, err := parseIDs(parts, max)
	if err != nil {
		d.errorf(path, "%v", err)
		return 0, false
	}
	return mask, true
}

// parseIDs parses "3", "0-2" items into a bit mask of ids 0..max (max < 64).
func parseIDs(parts []string, max int) (uint64, error) {
	var mask uint64
	for _, p := range parts {
		p = strings.TrimSpace(p)
		lo, hi, isRange := strings.Cut(p, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return 0, fmt.Errorf("%q is not a number or range such as 3 or 0-2", p)
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(strings.TrimSpace(hi))
			if err != nil {
				return 0, fmt.Errorf("%q is not a number or range such as 3 or 0-2", p)
			}
		}
		if a < 0 || b > max || a > b {
			return 0, fmt.Errorf("%q is outside 0..%d", p, max)
		}
		for i := a; i <= b; i++ {
			mask |= 1 << uint(i)
		}
	}
	return mask, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func joinComma(s []string) string { return strings.Join(s, ", ") }
