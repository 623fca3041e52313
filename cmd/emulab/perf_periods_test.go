package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestPerfPeriodsInterrupt: an interrupt during a period's report (its
// JSON file being written) waits for the file and the row, then closes
// the table; nothing is reported after it. Before, the signal goroutine
// printed the closing line and exited at once: inside a row being
// written, or before the file's rename, leaving FILE.tmp behind.
func TestPerfPeriodsInterrupt(t *testing.T) {
	var out bytes.Buffer
	inSave, finish := make(chan struct{}), make(chan struct{})
	saved := 0
	pp := &perfPeriods{out: &out, save: func(oc perfOutcome) error {
		if len(oc.bw) == 2 {
			close(inSave)
			<-finish
		}
		saved = len(oc.bw)
		return nil
	}}
	if ok, err := pp.report(bwRow{Size: 8192, Iters: 10}); !ok || err != nil {
		t.Fatalf("first period: %v, %v", ok, err)
	}
	reported := make(chan bool)
	go func() {
		ok, _ := pp.report(bwRow{Size: 8192, Iters: 20})
		reported <- ok
	}()
	<-inSave
	said := make(chan string)
	go func() { said <- pp.interrupt() }()
	select {
	case s := <-said:
		t.Fatalf("the interrupt did not wait for the period being saved: %q", s)
	case <-time.After(50 * time.Millisecond):
		// Not proof of waiting, but a failure here is always real.
	}
	close(finish)
	if !<-reported {
		t.Fatal("the period being saved when the interrupt came was not reported")
	}
	if s := <-said; !strings.Contains(s, "ended after 2 report(s)") {
		t.Errorf("interrupt said %q, want 2 reports", s)
	}
	if ok, err := pp.report(bwRow{Size: 8192, Iters: 30}); ok || err != nil || saved != 2 {
		t.Errorf("a period after the interrupt: reported %v, %v; %d saved, want 2", ok, err, saved)
	}
	if got := out.String(); !strings.HasSuffix(got, "\n"+perfLine+"\n") || strings.Count(got, "\n") != 3 {
		t.Errorf("output:\n%s\nwant two rows and the closing line", got)
	}
	if n := len(pp.outcome().bw); n != 2 {
		t.Errorf("outcome has %d periods, want 2", n)
	}
}
