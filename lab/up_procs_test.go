package lab

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestDaemonProcs(t *testing.T) {
	for _, c := range []struct{ cpus, daemons, want int }{
		{2, 3, 1}, {2, 1, 2}, {8, 3, 2}, {16, 4, 4}, {1, 20, 1}, {4, 0, 4},
	} {
		if got := daemonProcs(c.cpus, c.daemons); got != c.want {
			t.Errorf("%d cpus, %d daemons: %d, want %d", c.cpus, c.daemons, got, c.want)
		}
	}
}

func TestDaemonEnv(t *testing.T) {
	t.Setenv("GOMAXPROCS", "3")
	if env := daemonEnv(5); env != nil {
		t.Fatalf("a user's GOMAXPROCS is overridden: %v", env)
	}
	t.Setenv("GOMAXPROCS", "")
	// An empty GOMAXPROCS is set too (the runtime ignores it): left alone.
	if env := daemonEnv(5); env != nil {
		t.Fatal("GOMAXPROCS= set by the user is overridden")
	}
}

func TestDaemonEnvUnset(t *testing.T) {
	t.Setenv("GOMAXPROCS", "") // restored at cleanup
	os.Unsetenv("GOMAXPROCS")
	env := daemonEnv(1 << 20)
	n := slices.IndexFunc(env, func(s string) bool { return strings.HasPrefix(s, "GOMAXPROCS=") })
	if n < 0 || env[n] != "GOMAXPROCS=1" {
		t.Fatalf("env lacks GOMAXPROCS=1: %v", env)
	}
}
