package main

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
)

// perfTemp is the temporary file writePerfJSONFile is filling, so that
// an interrupt can remove it: the signal handler ends the process with
// os.Exit, which runs no deferred Remove, and a SIGINT during the last
// save of a run would otherwise leave .FILE.NNN.tmp beside the result.
var perfTemp struct {
	sync.Mutex
	name        string // the file being written; "" when none
	interrupted bool   // the handler ran: no new temporary file
}

var errPerfInterrupted = errors.New("interrupted")

// createPerfTemp creates the temporary file for path and records it.
func createPerfTemp(path string) (*os.File, error) {
	perfTemp.Lock()
	defer perfTemp.Unlock()
	if perfTemp.interrupted {
		return nil, errPerfInterrupted
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, err
	}
	perfTemp.name = f.Name()
	return f, nil
}

// donePerfTemp forgets the temporary file: renamed over the result or
// removed.
func donePerfTemp() {
	perfTemp.Lock()
	perfTemp.name = ""
	perfTemp.Unlock()
}

// removePerfTempOnInterrupt removes the temporary file being written, if
// any, and refuses new ones; the interrupt handler calls it just before
// os.Exit. The lock stays taken: a writer that reaches its rename after
// this blocks until the process is gone, so the result file keeps the
// last whole document.
func removePerfTempOnInterrupt() {
	perfTemp.Lock()
	perfTemp.interrupted = true
	if perfTemp.name != "" {
		os.Remove(perfTemp.name)
		perfTemp.name = ""
	}
}

// renamePerfTemp renames the temporary file over the result unless an
// interrupt came first (which removed it).
func renamePerfTemp(tmp, path string) error {
	perfTemp.Lock()
	defer perfTemp.Unlock()
	if perfTemp.interrupted {
		return errPerfInterrupted
	}
	return os.Rename(tmp, path)
}
