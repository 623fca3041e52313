package main

import (
	"fmt"
	"io"
	"sync"
)

// perfPeriods is the output of --run_infinitely: each period's JSON file
// and row, and the closing line an interrupt prints. The interrupt comes
// on the signal goroutine (stopOnSignal), which exits the process right
// after; without the lock its closing line could land inside a row being
// written, and the exit could cut a period's JSON file short before the
// rename that makes it whole, leaving a temporary file beside it.
type perfPeriods struct {
	out   io.Writer
	gbits bool
	save  func(perfOutcome) error // nil without --out_json

	mu      sync.Mutex
	oc      perfOutcome
	reports int
	ended   bool // the interrupt closed the table: nothing more is printed
}

// report saves and prints a period's row; false once interrupted.
func (pp *perfPeriods) report(row bwRow) (bool, error) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.ended {
		return false, nil
	}
	pp.oc.bw = append(pp.oc.bw, row)
	// The file first: a row on the screen is in the file, whenever the
	// interrupt comes.
	if pp.save != nil {
		if err := pp.save(pp.oc); err != nil {
			return false, err
		}
	}
	writeBWRow(pp.out, row, pp.gbits)
	pp.reports++
	return true, nil
}

// outcome is the periods reported so far.
func (pp *perfPeriods) outcome() perfOutcome {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.oc
}

// interrupt closes the table once the period being reported (if any) is
// in the file and on the screen, and says what was reported.
func (pp *perfPeriods) interrupt() string {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.ended = true
	fmt.Fprintln(pp.out, perfLine)
	return fmt.Sprintf("--run_infinitely ended after %d report(s), each period's destination memory checked; the period in progress is not reported", pp.reports)
}
