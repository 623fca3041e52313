package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/internal/ctlpeer"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/nicd"
)

// TestDaemonsHint: a run that failed while a daemon of its lab was dead
// (kill -9 of DST's emunic mid-run ends in IBV_WC_RETRY_EXC_ERR, whose own
// hint blames a busy machine) names the dead daemon and what to do, as it
// names a stopped one; a lab whose daemons all run adds nothing, and an
// error on the stopped daemon's own control socket named it already.
func TestDaemonsHint(t *testing.T) {
	runErr := errors.New("write_bw 65536 bytes, period 3: QP 0: perf_bw: message 7290: IBV_WC_RETRY_EXC_ERR")
	const down = "emulab down --state-dir S lab1"
	running := []lab.ProcStatus{{Name: "emuswitch-sw1", Pid: 10, Alive: true}, {Name: "emunic-h1", Pid: 11, Alive: true}}

	if got := daemonsHint(runErr, running, down); got != runErr {
		t.Errorf("every daemon running: got %q, want the error as it is", got)
	}
	if got := daemonsHint(nil, nil, down); got != nil {
		t.Errorf("no error: got %v", got)
	}

	dead := append(running, lab.ProcStatus{Name: "emunic-h2", Pid: 12})
	got := daemonsHint(runErr, dead, down)
	if !errors.Is(got, runErr) {
		t.Errorf("the hint must wrap the run's error: %v", got)
	}
	for _, want := range []string{"emunic-h2 (pid 12) is dead", down} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("a dead daemon: %q does not say %q", got, want)
		}
	}
	if strings.Contains(got.Error(), "emunic-h1") {
		t.Errorf("a running daemon named: %q", got)
	}
	if !anyStoppedOrDead(dead) || anyStoppedOrDead(running) {
		t.Errorf("anyStoppedOrDead: dead %v, running %v", anyStoppedOrDead(dead), anyStoppedOrDead(running))
	}

	stopped := append(running, lab.ProcStatus{Name: "emunic-h2", Pid: 12, Alive: true, Stopped: "stopped (SIGSTOP)", Resume: "`kill -CONT 12` resumes it"})
	got = daemonsHint(runErr, stopped, down)
	for _, want := range []string{"emunic-h2 (pid 12) is stopped (SIGSTOP): `kill -CONT 12` resumes it", "links look paused"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("a stopped daemon: %q does not say %q", got, want)
		}
	}
	if !anyStoppedOrDead(stopped) {
		t.Error("anyStoppedOrDead: a stopped daemon not seen")
	}

	na := &ctlpeer.NoAnswerError{Path: "ctl-h2.sock", Proc: ctlpeer.Proc{Pid: 12, Comm: "emunic", State: 'T'}}
	if got := daemonsHint(na, stopped, down); got != error(na) {
		t.Errorf("an answer the stopped daemon did not give names it already: got %q", got)
	}
}

// TestNICLinkDown: a NIC set down by `link set` reports "link":"up" with
// admin_down (the wire is there); perf must refuse it before the run, with
// the command that brings it up, as it refuses a link down at the switch.
func TestNICLinkDown(t *testing.T) {
	h := lab.NICHost{Lab: "lab1", Node: "h1"}
	if err := nicLinkDown(h, &nicd.Status{Link: "up"}, "/s"); err != nil {
		t.Errorf("link up: %v", err)
	}
	err := nicLinkDown(h, &nicd.Status{Link: "up", AdminDown: true}, "/s")
	if want := "host h1: the NIC's link is down (admin): `emulab link set --state-dir /s lab1/h1 up` brings it up"; err == nil || err.Error() != want {
		t.Errorf("set down:\n got %v\nwant %s", err, want)
	}
	err = nicLinkDown(h, &nicd.Status{Link: "down (peer)"}, "/s")
	if want := "host h1: the NIC's link is down (peer)"; err == nil || err.Error() != want {
		t.Errorf("down at the switch: got %v, want %s", err, want)
	}
}

// TestHeldHint: a run that `emulab down` cuts off reads the lab's state
// while down still holds it, its daemons already killed. The hint must not
// call them crashed and send the user to run down and up again; it says
// the lab was held, as down holds it, and how to see whether it is there.
func TestHeldHint(t *testing.T) {
	dead := []lab.ProcStatus{{Name: "emuswitch-spine1", Pid: 10}, {Name: "emunic-h1", Pid: 11}}
	procs, held := procsForHint(&lab.LabStatus{Name: "lab1", Locked: true, Procs: dead})
	if !held || procs != nil {
		t.Fatalf("a lab another controller holds: procs %v held %v, want none and held", procs, held)
	}
	procs, held = procsForHint(&lab.LabStatus{Name: "lab1", Procs: dead})
	if held || len(procs) != 2 {
		t.Fatalf("a lab nobody holds: procs %v held %v, want its daemons", procs, held)
	}
	runErr := errors.New("write_bw 65536 bytes: QP 0: EOF")
	got := heldHint(runErr, "/s", "lab1")
	if !errors.Is(got, runErr) {
		t.Errorf("the hint must wrap the run's error: %v", got)
	}
	for _, want := range []string{"another emulab held lab lab1", "emulab down", "emulab status --state-dir /s lab1"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("%q does not say %q", got, want)
		}
	}
	if strings.Contains(got.Error(), "crashed") || strings.Contains(got.Error(), "up again") {
		t.Errorf("a lab going down is not a crash: %q", got)
	}
	if heldHint(nil, "/s", "lab1") != nil {
		t.Error("no error: a hint")
	}
}
