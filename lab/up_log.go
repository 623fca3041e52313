package lab

import (
	"os"
	"strings"
)

// logSaysReady reports whether the log holds a line "ready" (the
// daemon's readiness signal on its standard output).
func logSaysReady(p string) (bool, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return false, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "ready" {
			return true, nil
		}
	}
	return false, nil
}

// logTail is the last n lines of a log, indented, for an error message.
func logTail(p string, n int) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "    (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return "    (empty)"
	}
	return "    " + strings.Join(lines, "\n    ")
}
