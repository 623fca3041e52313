package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// nsKillWait bounds how long Teardown waits for a SIGKILLed process.
const nsKillWait = 5 * time.Second

// Teardown removes everything lab recorded under root ("" is
// DefaultStateRoot): it stops the recorded processes (SIGTERM and SIGCONT,
// grace, SIGKILL, to their process groups), kills whatever else runs inside the
// lab's namespaces, deletes the namespaces (their interfaces, including
// TAPs whose owners are now dead, go with them), removes the socket files
// and finally the state directory. It works from the state directory
// alone, so it cleans up after kill -9 of any daemon or of the controller,
// and it is idempotent: a lab that is not there is not an error. A state
// record that was lost or damaged is made up for from up.json, the
// pidfiles and the namespaces named after the lab (recoverLeftovers).
func Teardown(root, lab string, grace time.Duration) error {
	if root == "" {
		root = DefaultStateRoot
	}
	if err := checkName(lab); err != nil {
		return fmt.Errorf("lab name: %w", err)
	}
	if _, err := os.Stat(root + "/" + lab); errors.Is(err, os.ErrNotExist) && len(prefixNamespaces(root, lab)) == 0 {
		return nil
	}
	s, err := OpenState(root, lab)
	if errors.Is(err, ErrStateCorrupt) {
		// Set aside, then torn down from what the rest of the
		// directory and the system show.
		rec := filepath.Join(root, lab, "state.json")
		if rerr := os.Rename(rec, rec+".damaged"); rerr != nil {
			return errors.Join(err, rerr)
		}
		s, err = OpenState(root, lab)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	// Only here, on the way down: up's own clean-up after a failure
	// tears down what it recorded, never what it finds by name.
	s.recoverLeftovers()
	return s.Teardown(grace)
}

// Teardown is the package-level Teardown for a state this process holds.
func (s *State) Teardown(grace time.Duration) error {
	var errs []error
	s.mu.Lock()
	procs := append([]nsProcEntry(nil), s.rec.Procs...)
	s.mu.Unlock()

	// 1. Recorded daemons: politely first, they may have state to flush.
	var term []nsProcEntry
	for _, p := range procs {
		if p.StartTime == 0 || !nsAlive(p.Pid, p.StartTime) {
			continue
		}
		nsSignal(p, syscall.SIGTERM)
		// A stopped daemon (kill -STOP, Ctrl-Z) acts on nothing but
		// SIGKILL until it is continued: continued, it takes the SIGTERM
		// now rather than being killed after the grace.
		nsSignal(p, syscall.SIGCONT)
		term = append(term, p)
	}
	deadline := time.Now().Add(grace)
	for _, p := range term {
		if !nsWaitGone(p.Pid, p.StartTime, time.Until(deadline)) {
			nsSignal(p, syscall.SIGKILL)
			if !nsWaitGone(p.Pid, p.StartTime, nsKillWait) {
				errs = append(errs, fmt.Errorf("process %s (pid %d) survived SIGKILL", p.Name, p.Pid))
			}
		}
	}

	// A namespace of the record that another lab now owns (this lab's
	// went, by hand or with a reboot, and a lab of the same name was
	// brought up under another state directory) is that lab's: forgotten,
	// not emptied or deleted.
	own := filepath.Join(absRoot(s.Root), s.Lab)
	for _, ns := range s.Namespaces() {
		if o := namespaceOwner(ns); o != "" && o != own {
			s.forgetNamespace(ns)
		}
	}

	// 2. Anything else inside the namespaces (shells from `exec`, a
	// daemon that was started but not recorded, a daemon's children).
	for _, ns := range s.Namespaces() {
		if err := nsKillAllIn(ns); err != nil {
			errs = append(errs, err)
		}
	}

	// 3. Namespaces, 4. socket files.
	for _, ns := range s.Namespaces() {
		if err := DeleteNamespace(ns); err != nil {
			errs = append(errs, err)
		}
	}
	sockDir := filepath.Join(s.Dir, "sock")
	for _, p := range s.Sockets() {
		if filepath.Dir(filepath.Clean(p)) != sockDir {
			// SocketPath only makes paths in sock/: anything else in
			// the record was not written by up, and root removes
			// nothing it did not make.
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// Keep the record so a second `down` can retry.
		return errors.Join(errs...)
	}
	s.mu.Lock()
	s.rec = nsRecord{Lab: s.Lab}
	s.mu.Unlock()
	if err := os.RemoveAll(s.Dir); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// nsSignal signals a recorded process and, if it leads its own process
// group (State.Start sets one up), the whole group.
func nsSignal(p nsProcEntry, sig syscall.Signal) {
	if st, err := nsReadStat(p.Pid); err == nil && st.Pgrp == p.Pid {
		_ = syscall.Kill(-p.Pid, sig)
		return
	}
	_ = syscall.Kill(p.Pid, sig)
}

// nsKillAllIn SIGKILLs every process in the named namespace and waits for
// them to go.
func nsKillAllIn(name string) error {
	for round := 0; round < 3; round++ {
		pids, err := nsPidsIn(name)
		if errors.Is(err, os.ErrNotExist) {
			return nil // never created, or already deleted
		}
		if err != nil {
			return fmt.Errorf("namespace %s: %w", name, err)
		}
		if len(pids) == 0 {
			return nil
		}
		starts := make([]uint64, len(pids))
		for i, pid := range pids {
			starts[i], _ = nsStartTime(pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for i, pid := range pids {
			nsWaitGone(pid, starts[i], nsKillWait)
		}
	}
	pids, _ := nsPidsIn(name)
	var live []int
	for _, pid := range pids {
		if nsAlive(pid, 0) {
			live = append(live, pid)
		}
	}
	if len(live) > 0 {
		return fmt.Errorf("namespace %s: processes %v survived SIGKILL", name, live)
	}
	return nil
}
