package sm

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/mad"
)

// stepClock is a clock whose one timer the test fires by hand.
type stepClock struct {
	now clock.Time
	t   *stepTimer
}

type stepTimer struct {
	at    clock.Time
	armed bool
	f     func()
}

func (c *stepClock) Now() clock.Time { return c.now }
func (c *stepClock) NewTimer(f func()) clock.Timer {
	c.t = &stepTimer{f: f}
	return c.t
}
func (t *stepTimer) Reset(at clock.Time) { t.at, t.armed = at, true }
func (t *stepTimer) Stop() bool          { was := t.armed; t.armed = false; return was }
func (t *stepTimer) When() (clock.Time, bool) {
	return t.at, t.armed
}

// silentPort sends SMPs nowhere: nothing ever answers.
type silentPort struct{ sent int }

func (p *silentPort) SendSMP(mad.SMP)       { p.sent++ }
func (p *silentPort) LocalSMP(mad.SMP) bool { return false }

// TestRunnerOnStep: the step hook runs after the steps a timer makes too,
// so a sweep that ends on timeouts (nothing answers) is seen when it ends,
// not when the next answer comes.
func TestRunnerOnStep(t *testing.T) {
	clk := &stepClock{}
	p := &silentPort{}
	r := NewRunner(New(Config{Timeout: 10 * clock.Microsecond, Retries: 1}), clk, p)
	steps, sweeps := 0, 0
	r.OnStep(func() {
		steps++
		sweeps = r.SM().Stats().HeavySweeps
	})
	r.Start()
	for i := 0; i < 100 && sweeps == 0; i++ {
		if !clk.t.armed {
			t.Fatalf("no timer armed after %d steps and no sweep ended", steps)
		}
		clk.now = clk.t.at
		clk.t.armed = false
		clk.t.f()
	}
	if sweeps != 1 {
		t.Fatalf("the step hook saw %d heavy sweeps after %d steps (errors %v)", sweeps, steps, r.SM().Errors())
	}
}

// TestWriteRoutesNoSwitch: a fabric of HCAs cabled to each other has no
// forwarding table to show, and says so instead of printing nothing.
func TestWriteRoutesNoSwitch(t *testing.T) {
	top := &Topology{Nodes: []*Node{{Type: mad.NodeTypeCA, Desc: "h1 HCA-1"}, {Type: mad.NodeTypeCA, Desc: "h2 HCA-1"}}}
	var b strings.Builder
	if err := top.Write(&b, "routes", nil); err != nil || !strings.Contains(b.String(), "no switch in the fabric") {
		t.Errorf("routes of a switchless fabric: %q %v", b.String(), err)
	}
}
