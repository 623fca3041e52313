// Package cpuprof is the daemons' --cpuprofile flag: a CPU profile of the
// whole run, for go tool pprof.
package cpuprof

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// Start profiles the process into the file at path until the returned stop
// runs (deferred by main, so the profile ends with the run). Errors name the
// flag and the path.
func Start(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
