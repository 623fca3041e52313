package rt

import (
	"testing"
	"time"
)

// TestAlarm: an armed alarm signals once it is due, never before; a
// stopped one does not signal; Reset replaces an earlier arming; Close
// releases it (on Linux its timerfd and reader goroutine).
func TestAlarm(t *testing.T) {
	a := NewAlarm()
	defer func() { a.Close() }() // a may be replaced below

	t0 := time.Now()
	a.Reset(2 * time.Millisecond)
	select {
	case <-a.C:
		if d := time.Since(t0); d < 2*time.Millisecond {
			t.Errorf("signalled after %v, before its 2ms", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no signal")
	}

	// A stall of 50 ms between arming and disarming (a loaded machine) lets
	// the first arming expire, and its signal is then legitimate: such a
	// round proves nothing, and its alarm is replaced by a fresh one, so
	// that a late signal cannot leak into the next round.
	disarmed := func(what string, disarm func()) {
		t.Helper()
		t0 := time.Now()
		a.Reset(50 * time.Millisecond)
		disarm()
		raced := time.Since(t0) >= 50*time.Millisecond
		select {
		case <-a.C:
			if !raced {
				t.Errorf("signalled %s", what)
			}
		case <-time.After(150 * time.Millisecond):
		}
		if raced {
			t.Logf("%s: the test stalled past the 50 ms alarm; not checked", what)
			a.Close()
			a = NewAlarm()
		}
	}
	disarmed("after Stop", a.Stop)

	// Reset moves an armed alarm earlier and later.
	a.Reset(time.Hour)
	a.Reset(0) // now
	select {
	case <-a.C:
	case <-time.After(5 * time.Second):
		t.Fatal("Reset(0) did not signal")
	}
	disarmed("at the replaced time", func() { a.Reset(time.Hour) }) // replaced long before it is due
}

func TestAlarmCloseReleases(t *testing.T) {
	a := NewAlarm()
	a.Reset(time.Hour)
	done := make(chan struct{})
	go func() { a.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if impl, ok := a.impl.(*timerfdAlarm); ok {
		select {
		case <-impl.done:
		default:
			t.Error("the timerfd reader goroutine still runs")
		}
	}
}
