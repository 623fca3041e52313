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
	defer a.Close()

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

	a.Reset(50 * time.Millisecond)
	a.Stop()
	select {
	case <-a.C:
		t.Error("a stopped alarm signalled")
	case <-time.After(150 * time.Millisecond):
	}

	// Reset moves an armed alarm earlier and later.
	a.Reset(time.Hour)
	a.Reset(0) // now
	select {
	case <-a.C:
	case <-time.After(5 * time.Second):
		t.Fatal("Reset(0) did not signal")
	}
	a.Reset(50 * time.Millisecond) // replaced long before it is due
	a.Reset(time.Hour)
	select {
	case <-a.C:
		t.Error("signalled at the replaced time")
	case <-time.After(100 * time.Millisecond):
	}
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
