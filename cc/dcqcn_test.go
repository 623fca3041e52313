package cc

import (
	"math"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

const us = clock.Microsecond

var cnp = &Feedback{Kind: FeedbackCNP}

// TestPaperStepResponse is issue check (b): one flow at 40 Gb/s, one CNP,
// paper constants. The rate halves; fast recovery halves the gap to the
// target every 55 µs, so after 5 steps (275 µs) the flow is back above 97%
// of its original rate, and not before.
func TestPaperStepResponse(t *testing.T) {
	r := NewRP(PaperProfile(), 40e9)
	if r.Rate() != 40e9 || r.NextDeadline() != clock.Never {
		t.Fatal("an uncongested flow must run at line rate with no timer")
	}
	r.OnFeedback(0, cnp)
	if got := r.Rate(); got != 20e9 {
		t.Fatalf("after one CNP rate = %d, want 20e9 (halved)", got)
	}
	want := []float64{30e9, 35e9, 37.5e9, 38.75e9, 39.375e9}
	for i, w := range want {
		at := clock.Time(i+1) * 55 * us
		if d := r.NextDeadline(); d != at {
			t.Fatalf("step %d deadline %v, want %v", i+1, d, at)
		}
		r.Advance(at)
		if got := float64(r.Rate()); math.Abs(got-w) > 1 {
			t.Fatalf("step %d at %v: rate %.0f, want %.0f", i+1, at, got, w)
		}
		frac := float64(r.Rate()) / 40e9
		if i < 4 && frac >= 0.97 {
			t.Fatalf("above 97%% after only %d steps", i+1)
		}
		t.Logf("fast recovery step %d at %v: %.4f of the original rate", i+1, at, frac)
	}
	if f := float64(r.Rate()) / 40e9; f < 0.97 {
		t.Fatalf("after 5 steps (275 us) rate is %.4f of the original", f)
	}
	if r.Stats.FastRecovery != 5 || r.Stats.Additive != 0 {
		t.Fatalf("stats %+v", r.Stats)
	}
	// The sixth event is additive increase (RT += R_AI, capped at the line
	// rate, which RT already is), then RC averages toward RT.
	r.Advance(6 * 55 * us)
	if r.Stats.Additive != 1 || r.TargetRate() != 40e9 || math.Abs(float64(r.Rate())-39.6875e9) > 1 {
		t.Fatalf("sixth event: RT %d RC %d, stats %+v", r.TargetRate(), r.Rate(), r.Stats)
	}
	// Below the cap, additive increase grows RT by exactly 40 Mb/s.
	r2 := NewRP(PaperProfile(), 40e9)
	r2.OnFeedback(0, cnp)
	r2.OnFeedback(1*us, cnp) // RT = 20 Gb/s now
	rt := r2.TargetRate()
	r2.Advance(1*us + 6*55*us)
	if r2.TargetRate() != rt+40e6 {
		t.Fatalf("additive increase: RT %d -> %d", rt, r2.TargetRate())
	}
}

// TestPaperAlphaDecay: alpha is 1 after the first CNP and decays by (1-g)
// every K = 55 µs without a CNP: half-life 177 windows ≈ 9.7 ms.
func TestPaperAlphaDecay(t *testing.T) {
	r := NewRP(PaperProfile(), 40e9)
	r.OnFeedback(0, cnp)
	if a := r.Alpha(0); a != 1 {
		t.Fatalf("alpha after first CNP = %v, want 1", a)
	}
	g := 1.0 / 256
	for _, n := range []int{1, 10, 100, 177, 500} {
		at := clock.Time(n) * 55 * us
		want := math.Pow(1-g, float64(n))
		if a := r.Alpha(at); math.Abs(a-want) > 1e-12 {
			t.Fatalf("alpha after %d windows = %v, want %v", n, a, want)
		}
		// Between windows it does not move.
		if a := r.Alpha(at + 54*us); math.Abs(a-want) > 1e-12 {
			t.Fatalf("alpha moved inside a window: %v", a)
		}
	}
	half := math.Log(0.5) / math.Log(1-g)
	t.Logf("alpha half-life: %.1f windows = %.2f ms", half, half*55/1000)
	if half < 176 || half > 178 {
		t.Fatalf("half-life %v windows", half)
	}
	// A second CNP 10 ms after the first cuts by alpha/2 with the decayed
	// alpha (≈0.49), i.e. ≈25%, not 50%.
	r2 := NewRP(PaperProfile(), 40e9)
	r2.OnFeedback(0, cnp)
	r2.Advance(10 * clock.Millisecond)
	before := float64(r2.Rate())
	a := r2.Alpha(10 * clock.Millisecond)
	r2.OnFeedback(10*clock.Millisecond, cnp)
	cutFrac := 1 - float64(r2.Rate())/before
	if math.Abs(cutFrac-a/2) > 1e-9 || cutFrac < 0.2 || cutFrac > 0.3 {
		t.Fatalf("second cut %.3f with alpha %.3f", cutFrac, a)
	}
}

// TestAdvanceIsPathIndependent: advancing in many small steps or one big
// one ends in the same state (the NIC may wake late or early).
func TestAdvanceIsPathIndependent(t *testing.T) {
	for _, prof := range []DCQCN{PaperProfile(), NVIDIAProfile()} {
		a, b := NewRP(prof, 100e9), NewRP(prof, 100e9)
		a.OnFeedback(0, cnp)
		b.OnFeedback(0, cnp)
		end := 3 * clock.Millisecond
		for now := clock.Time(0); now <= end; now += 7 * us {
			a.Advance(now)
		}
		a.Advance(end)
		b.Advance(end)
		if a.Rate() != b.Rate() || a.TargetRate() != b.TargetRate() || a.Alpha(end) != b.Alpha(end) || a.Stats != b.Stats {
			t.Fatalf("%+v: stepwise %d/%d/%v vs once %d/%d/%v", prof.PaperAlpha, a.Rate(), a.TargetRate(), a.Alpha(end), b.Rate(), b.TargetRate(), b.Alpha(end))
		}
	}
}

// TestRecoveryToLineRateStopsTimer: an uncongested flow costs no events.
func TestRecoveryToLineRateStopsTimer(t *testing.T) {
	p := PaperProfile()
	p.RPAIRate = 5000 // fast climb for the test
	r := NewRP(p, 10e9)
	r.OnFeedback(0, cnp)
	r.Advance(100 * clock.Millisecond)
	if r.Rate() != 10e9 || r.NextDeadline() != clock.Never {
		t.Fatalf("rate %d deadline %v", r.Rate(), r.NextDeadline())
	}
}

// TestHyperIncrease: with the byte counter firing as well as the timer, once
// both stages pass F the target grows by i*R_HAI.
func TestHyperIncrease(t *testing.T) {
	p := PaperProfile()
	p.RPByteReset = 1000
	r := NewRP(p, 40e9)
	r.OnFeedback(0, cnp)
	for i := 1; i <= 8; i++ {
		now := clock.Time(i) * 55 * us
		r.OnSend(now-1, 1000) // one byte event just before each timer event
		r.Advance(now)
	}
	if r.Stats.Hyper == 0 || r.Stats.ByteEvents != 8 || r.Stats.TimerEvents != 8 {
		t.Fatalf("stats %+v", r.Stats)
	}
}

// TestMonitorPeriodCoalesces: firmware mode cuts at the first CNP, then at
// most once per rate_reduce_monitor_period however many CNPs arrive.
func TestMonitorPeriodCoalesces(t *testing.T) {
	r := NewRP(NVIDIAProfile(), 100e9)
	r.OnFeedback(0, cnp)
	first := r.Rate()
	if want := uint64(100e9 * (1 - 1023.0/2048)); first != want { // alpha 1023/1024, cut alpha/2
		t.Fatalf("first cut to %d", first)
	}
	r.OnFeedback(1*us, cnp)
	r.OnFeedback(2*us, cnp)
	if r.Stats.Cuts != 1 || r.Rate() != first {
		t.Fatalf("CNPs inside the window cut at once: %+v", r.Stats)
	}
	r.Advance(4 * us)
	if r.Stats.Cuts != 2 || r.Rate() >= first {
		t.Fatalf("pending cut not applied at window end: %+v rate %d", r.Stats, r.Rate())
	}
	r.Advance(8 * us) // a quiet window closes without a cut
	if r.Stats.Cuts != 2 || r.Stats.CNPs != 3 {
		t.Fatalf("%+v", r.Stats)
	}
}

// TestFirmwareAlphaWindows: once per rp_dce_tcp_rtt window alpha moves by
// g toward 1 if a CNP arrived in it, toward 0 otherwise.
func TestFirmwareAlphaWindows(t *testing.T) {
	p := NVIDIAProfile()
	r := NewRP(p, 100e9)
	g := p.RPDCETCPG / 1024
	r.OnFeedback(0, cnp)
	a0 := p.RPInitialAlphaValue / 1024
	if a := r.Alpha(1 * us); math.Abs(a-((1-g)*a0+g)) > 1e-12 {
		t.Fatalf("window with CNP: %v", a)
	}
	if a := r.Alpha(11 * us); math.Abs(a-((1-g)*a0+g)*math.Pow(1-g, 10)) > 1e-12 {
		t.Fatalf("10 quiet windows: %v", a)
	}
}

func TestFloorAndFirstRate(t *testing.T) {
	p := PaperProfile()
	p.RPRateToSetOnFirstCNP = 1000
	r := NewRP(p, 40e9)
	r.OnFeedback(0, cnp)
	if r.Rate() != 500e6 { // set to 1 Gb/s, then cut in half
		t.Fatalf("rate %d", r.Rate())
	}
	for i := 0; i < 40; i++ {
		r.OnFeedback(clock.Time(i)*us, cnp)
	}
	if r.Rate() != 10e6 || r.Stats.MinRateClamps == 0 {
		t.Fatalf("floor: rate %d", r.Rate())
	}
}

func TestNP(t *testing.T) {
	np := NewNP(PaperProfile())
	var fl NPFlow
	got := []bool{np.OnCE(&fl, 0), np.OnCE(&fl, 10*us), np.OnCE(&fl, 49*us), np.OnCE(&fl, 50*us), np.OnCE(&fl, 60*us), np.OnCE(&fl, 100*us)}
	want := []bool{true, false, false, true, false, true}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("CNP decisions %v, want %v", got, want)
		}
	}
	if np.Priority(3) != 6 || np.CNPDSCP != 48 {
		t.Fatal("CNP marking defaults")
	}
	np.FixedPrio = false
	if np.Priority(3) != 3 {
		t.Fatal("mirrored priority")
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []DCQCN{PaperProfile(), NVIDIAProfile()} {
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	bad := NVIDIAProfile()
	bad.RPGD = 3
	if err := bad.Validate(); err == nil || err.Error()[:5] != "rp_gd" {
		t.Fatalf("rp_gd: %v", err)
	}
	bad = NVIDIAProfile()
	bad.NPCNPPrio = 9
	if err := bad.Validate(); err == nil {
		t.Fatal("np_cnp_prio 9 accepted")
	}
	// A negative first-CNP rate was taken as 0 (cut as usual) without a
	// word; the lab file refuses negative values.
	bad = NVIDIAProfile()
	bad.RPRateToSetOnFirstCNP = -5
	if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), "rp_rate_to_set_on_first_cnp: ") {
		t.Fatalf("rp_rate_to_set_on_first_cnp -5: %v", err)
	}
	// A floor above the cap: NewRP clamped the floor to the cap, ignoring
	// it without a word. A cap of 0 is the line rate.
	bad = NVIDIAProfile()
	bad.RPMinRate, bad.RPMaxRate = 40000, 20000
	if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), "rp_min_rate: ") {
		t.Fatalf("rp_min_rate above rp_max_rate: %v", err)
	}
	bad.RPMaxRate = 0
	if err := bad.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestFixed(t *testing.T) {
	var a Algorithm = &Fixed{BPS: 25e9}
	a.OnFeedback(0, cnp)
	a.OnSend(0, 100)
	a.Advance(clock.Second)
	if a.Rate() != 25e9 || a.NextDeadline() != clock.Never || a.Name() != "none" {
		t.Fatal("fixed")
	}
}

// BenchmarkRPEvents measures the cost of one CNP plus the timer and byte
// events of a congested flow; it must not allocate.
func BenchmarkRPEvents(b *testing.B) {
	r := NewRP(NVIDIAProfile(), 100e9)
	b.ReportAllocs()
	now := clock.Time(0)
	for i := 0; i < b.N; i++ {
		now += us
		if i%50 == 0 {
			r.OnFeedback(now, cnp)
		}
		r.OnSend(now, 4096)
		r.Advance(now)
	}
}
