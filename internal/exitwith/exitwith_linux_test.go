package exitwith

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestContext: the context ends, with a cause naming the pid, when the
// watched process exits, through a pidfd and through the /proc fallback
// of kernels without one; cancel ends the watch and not as an exit; a pid
// that does not exist is refused.
func TestContext(t *testing.T) {
	for _, c := range []struct {
		name  string
		pidfd func(int, int) (int, error)
	}{
		{"pidfd", unix.PidfdOpen},
		{"proc", func(int, int) (int, error) { return -1, unix.ENOSYS }},
	} {
		t.Run(c.name, func(t *testing.T) {
			pidfdOpen = c.pidfd
			defer func() { pidfdOpen = unix.PidfdOpen }()

			cmd := exec.Command("sleep", "60")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			ctx, cancel, err := Context(context.Background(), cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			defer cancel()
			select {
			case <-ctx.Done():
				t.Fatalf("done while the process runs: %v", context.Cause(ctx))
			default:
			}
			// Killed and not reaped: a zombie has exited too.
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("not done 10 s after the process exited")
			}
			cmd.Wait()
			if err := context.Cause(ctx); !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "pid ") {
				t.Errorf("cause %v", err)
			}

			// Cancelled before the process exits: not an exit.
			cmd = exec.Command("sleep", "60")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			ctx, cancel, err = Context(context.Background(), cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			cancel()
			cancel()
			<-ctx.Done()
			if err := context.Cause(ctx); errors.Is(err, ErrExited) {
				t.Errorf("cancelled: cause %v", err)
			}
		})
	}
	// A pid past pid_max does not exist.
	if _, _, err := Context(context.Background(), 1<<30); err == nil || !strings.Contains(err.Error(), "--exit-with-pid 1073741824: no such process") {
		t.Errorf("no such process: %v", err)
	}
}
