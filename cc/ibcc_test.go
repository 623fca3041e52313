package cc

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

var becn = &Feedback{Kind: FeedbackBECN}

func TestCCTEntry(t *testing.T) {
	const T = 1000 * clock.Nanosecond // one largest packet
	for _, c := range []struct {
		e    CCTEntry
		want clock.Time
		word uint16
	}{
		{CCTEntry{0, 0}, 0, 0x0000},
		{CCTEntry{0, 1}, T, 0x0001},
		{CCTEntry{0, 7}, 7 * T, 0x0007},
		{CCTEntry{1, 3}, 1500 * clock.Nanosecond, 0x4003},
		{CCTEntry{2, 5}, 1250 * clock.Nanosecond, 0x8005},
		{CCTEntry{3, 0x3FFF}, 125 * clock.Nanosecond * 0x3FFF, 0xFFFF},
	} {
		if got := c.e.Delay(T); got != c.want {
			t.Errorf("%+v.Delay(1us) = %v, want %v", c.e, got, c.want)
		}
		if got := c.e.Word(); got != c.word {
			t.Errorf("%+v.Word() = %#04x, want %#04x", c.e, got, c.word)
		}
	}
}

func TestMellanoxCCT(t *testing.T) {
	tab := MellanoxCCT()
	if len(tab) != 128 {
		t.Fatalf("%d entries", len(tab))
	}
	// floor(7 i^2 / 95^2 / 0.218) at a few points, and monotone.
	for i, want := range map[int]uint16{0: 0, 16: 0, 24: 2, 44: 6, 64: 14, 100: 35, 127: 57} {
		if e := tab[i]; e.Shift != 0 || e.Multiplier != want {
			t.Errorf("entry %d = %d:%d, want 0:%d", i, e.Shift, e.Multiplier, want)
		}
	}
	for i := 1; i < len(tab); i++ {
		if tab[i].Multiplier < tab[i-1].Multiplier {
			t.Fatalf("entry %d decreases", i)
		}
	}
	lin := LinearCCT(5, 3)
	for i, e := range lin {
		if e.Shift != 2 || int(e.Multiplier) != 3*i {
			t.Fatalf("linear entry %d = %+v", i, e)
		}
	}
}

func TestParseCCT(t *testing.T) {
	got, err := ParseCCT("0:0, 0:1,1:0x10,3:16383")
	if err != nil {
		t.Fatal(err)
	}
	want := []CCTEntry{{0, 0}, {0, 1}, {1, 16}, {3, 16383}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "0", "4:1", "0:16384", "x:1", "0:1,,0:2", "-1:2"} {
		if _, err := ParseCCT(bad); err == nil {
			t.Errorf("ParseCCT(%q) accepted", bad)
		}
	}
}

func TestIBCCValidate(t *testing.T) {
	ok := DefaultIBCC()
	if err := ok.Validate(); err != nil {
		t.Fatalf("default: %v", err)
	}
	for _, c := range []struct {
		name string
		mod  func(c *IBCC)
		want string
	}{
		{"increase 0", func(c *IBCC) { c.CCTIIncrease = 0 }, "ccti_increase"},
		{"empty table", func(c *IBCC) { c.CCT = nil }, "cct"},
		{"limit beyond table", func(c *IBCC) { c.CCTILimit = 128 }, "ccti_limit"},
		{"min above limit", func(c *IBCC) { c.CCTILimit = 3; c.CCTIMin = 4 }, "ccti_min"},
		{"bad entry", func(c *IBCC) { c.CCT = []CCTEntry{{4, 0}}; c.CCTILimit = 0 }, "cct: entry 0"},
		{"bad port control", func(c *IBCC) { c.PortControl = 7 }, "port_control"},
	} {
		cfg := DefaultIBCC()
		c.mod(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming %s", c.name, err, c.want)
		}
	}
}

// testIBCC is a small table: CCTI i delays i largest-packet times.
func testIBCC() IBCC {
	t := make([]CCTEntry, 16)
	for i := range t {
		t[i] = CCTEntry{Multiplier: uint16(i)}
	}
	return IBCC{CCTITimer: 10, CCTIIncrease: 2, CCTIMin: 1, CCTILimit: 9, CCT: t}
}

// TestIBCCStepResponse: a burst of BECNs raises the CCTI by CCTI_Increase
// each up to CCTI_Limit; the timer then walks it back down by one per
// CCTI_Timer (10 × 1.024 µs) to CCTI_Min, where it stops; the delay and the
// rate follow CCT[CCTI] at every step.
func TestIBCCStepResponse(t *testing.T) {
	const line = 100e9
	const pkt = 4096 + 26 + 4 // the largest packet: 4 KiB payload plus headers
	r := NewIBCCRP(testIBCC(), line, pkt)
	T := clock.SerializationTime(pkt, line)
	if r.CCTI() != 1 || r.NextDeadline() != clock.Never {
		t.Fatalf("start: CCTI %d, deadline %v; want CCTI_Min 1 and no timer", r.CCTI(), r.NextDeadline())
	}
	if r.Delay() != T || r.Rate() != uint64(line/2) {
		t.Fatalf("CCTI 1: delay %v rate %d, want %v and half the line", r.Delay(), r.Rate(), T)
	}
	// Five BECNs within one timer period: 1 -> 3 -> 5 -> 7 -> 9 -> 9.
	for i, want := range []uint16{3, 5, 7, 9, 9} {
		r.OnFeedback(clock.Time(i)*clock.Microsecond, becn)
		if r.CCTI() != want {
			t.Fatalf("BECN %d: CCTI %d, want %d", i+1, r.CCTI(), want)
		}
	}
	if r.Stats.BECNs != 5 || r.Stats.Increases != 4 || r.Stats.AtLimit != 1 || r.Stats.MaxCCTI != 9 {
		t.Fatalf("stats %+v", r.Stats)
	}
	if got, want := r.Rate(), uint64(line/10); got != want {
		t.Fatalf("at the limit: rate %d, want %d (1/(1+9) of the line)", got, want)
	}
	// The timer was armed by the first BECN, at 0: expiries at 10.24,
	// 20.48, ... µs, not restarted by the later BECNs.
	period := 10 * CCTIUnit
	if d := r.NextDeadline(); d != period {
		t.Fatalf("deadline %v, want %v", d, period)
	}
	for k := 1; k <= 8; k++ {
		at := clock.Time(k) * period
		r.Advance(at - 1)
		if r.CCTI() != uint16(9-k+1) {
			t.Fatalf("just before expiry %d: CCTI %d", k, r.CCTI())
		}
		r.Advance(at)
		want := uint16(9 - k)
		if r.CCTI() != want {
			t.Fatalf("expiry %d at %v: CCTI %d, want %d", k, at, r.CCTI(), want)
		}
		if r.Delay() != clock.Time(want)*T {
			t.Fatalf("expiry %d: delay %v", k, r.Delay())
		}
	}
	if r.CCTI() != 1 || r.NextDeadline() != clock.Never || r.Stats.TimerDecrements != 8 {
		t.Fatalf("end: CCTI %d deadline %v stats %+v; want CCTI_Min and a stopped timer", r.CCTI(), r.NextDeadline(), r.Stats)
	}
	// A new BECN restarts the timer from its own time.
	r.OnFeedback(100*period, becn)
	if r.CCTI() != 3 || r.NextDeadline() != 101*period {
		t.Fatalf("restart: CCTI %d deadline %v", r.CCTI(), r.NextDeadline())
	}
}

// TestIBCCEquilibrium: one BECN every CCTI_Timer/2 with increase 1 climbs
// by one per period (two up, one down) until the limit.
func TestIBCCEquilibrium(t *testing.T) {
	cfg := testIBCC()
	cfg.CCTIIncrease, cfg.CCTIMin, cfg.CCTILimit = 1, 0, 15
	r := NewIBCCRP(cfg, 100e9, 4126)
	period := 10 * CCTIUnit
	for k := 0; k < 20; k++ {
		r.OnFeedback(clock.Time(k)*period/2+1, becn)
	}
	r.Advance(10*period - 1)
	// 20 BECNs (+20), 9 expiries before 10 periods (-9).
	if r.CCTI() != 11 {
		t.Fatalf("CCTI %d after 20 BECNs and 9 expiries, want 11", r.CCTI())
	}
}

// TestIBCCAdvanceIsPathIndependent: advancing in one call or in many gives
// the same state.
func TestIBCCAdvanceIsPathIndependent(t *testing.T) {
	a := NewIBCCRP(DefaultIBCC(), 100e9, 4126)
	b := NewIBCCRP(DefaultIBCC(), 100e9, 4126)
	for i := 0; i < 60; i++ {
		a.OnFeedback(clock.Time(i)*clock.Microsecond, becn)
		b.OnFeedback(clock.Time(i)*clock.Microsecond, becn)
	}
	end := 400 * clock.Microsecond
	a.Advance(end)
	for t0 := 60 * clock.Microsecond; t0 <= end; t0 += 333 * clock.Nanosecond {
		b.Advance(t0)
	}
	b.Advance(end)
	if a.CCTI() != b.CCTI() || a.NextDeadline() != b.NextDeadline() || a.Stats != b.Stats {
		t.Fatalf("one step: %d %v %+v; many: %d %v %+v", a.CCTI(), a.NextDeadline(), a.Stats, b.CCTI(), b.NextDeadline(), b.Stats)
	}
}

func TestIBCCTimerZeroAndOtherFeedback(t *testing.T) {
	cfg := testIBCC()
	cfg.CCTITimer = 0
	r := NewIBCCRP(cfg, 100e9, 4126)
	r.OnFeedback(0, cnp) // a RoCE CNP is not IB CC's signal
	r.OnFeedback(0, &Feedback{Kind: FeedbackACK})
	if r.CCTI() != 1 || r.Stats.BECNs != 0 {
		t.Fatalf("non-BECN feedback changed the state: %d %+v", r.CCTI(), r.Stats)
	}
	r.OnFeedback(0, becn)
	r.Advance(clock.Second)
	if r.CCTI() != 3 || r.NextDeadline() != clock.Never {
		t.Fatalf("CCTI_Timer 0 must never decrease: CCTI %d deadline %v", r.CCTI(), r.NextDeadline())
	}
	cfg.TriggerThreshold = 5
	r2 := NewIBCCRP(cfg, 100e9, 4126)
	for range 4 {
		r2.OnFeedback(0, becn)
	}
	// 1 -> 3 -> 5 -> 7 -> 9: three BECNs leave CCTI >= 5.
	if r2.Stats.LogEvents != 3 {
		t.Fatalf("log events %d, want 3", r2.Stats.LogEvents)
	}
}

// FuzzParseCCT: any string either parses into entries that re-encode to
// valid words, or is an error; never a panic.
func FuzzParseCCT(f *testing.F) {
	for _, s := range []string{"0:0,0:1,1:0x10,3:16383", "0:0", "4:1", "", "0:1,,0:2", " 2 : 9 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tab, err := ParseCCT(s)
		if err != nil {
			return
		}
		for i, e := range tab {
			if e.Shift > 3 || e.Multiplier > 0x3FFF || (CCTEntry{Shift: uint8(e.Word() >> 14), Multiplier: e.Word() & 0x3FFF}) != e {
				t.Fatalf("entry %d %+v does not round-trip", i, e)
			}
		}
	})
}

// BenchmarkIBCCRP: one BECN, a timer expiry and a delay lookup, the work a
// source does per congestion signal.
func BenchmarkIBCCRP(b *testing.B) {
	b.ReportAllocs()
	r := NewIBCCRP(DefaultIBCC(), 100e9, 4138)
	now := clock.Time(0)
	var d clock.Time
	for i := 0; i < b.N; i++ {
		now += 5 * clock.Microsecond
		r.OnFeedback(now, becn)
		r.Advance(now + 3*clock.Microsecond)
		d += r.Delay()
	}
	if d < 0 {
		b.Fatal(d)
	}
}
