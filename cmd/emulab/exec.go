//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/emufabric/emufabric/lab"
)

type execFlags struct {
	stateDir string
}

func init() {
	var fl execFlags
	cmd := &cobra.Command{
		Use:   "exec NODE -- CMD [ARG...]",
		Short: "Run a command inside a node's namespace (root)",
		Long: `exec runs CMD inside the network namespace of NODE, as ip netns exec does but
without a shell: the arguments are passed as they are. NODE is LAB/NODE, or
just NODE when one lab is up. --state-dir goes before NODE or between NODE
and "--"; everything after "--" is the command's. Standard input, output and error are the
terminal's; exec exits with the command's exit status (128+N if a signal N
ended it). SIGTERM and SIGHUP are passed on to the command, and so is SIGINT
unless it came from the terminal (which sends Ctrl-C to the command itself).`,
		Example: `  sudo bin/emulab exec h1 -- ping -c 3 10.0.0.2
  sudo bin/emulab exec two-hosts/h2 -- iperf3 -s -1
  sudo bin/emulab exec h1 -- ip addr`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Flag parsing stops at NODE, so "--" reaches us as an
			// argument. exec's own --state-dir may also come between
			// NODE and a "--" (as other commands take flags after
			// their arguments); without a "--" everything is the
			// command's.
			argv := args[1:]
			if slices.Contains(argv, "--") {
				for len(argv) > 0 && (argv[0] == "--state-dir" || strings.HasPrefix(argv[0], "--state-dir=")) {
					if v, ok := strings.CutPrefix(argv[0], "--state-dir="); ok {
						fl.stateDir, argv = v, argv[1:]
						continue
					}
					if len(argv) < 2 || argv[1] == "--" {
						return fmt.Errorf("exec %s: --state-dir needs a directory", args[0])
					}
					fl.stateDir, argv = argv[1], argv[2:]
				}
			}
			if argv[0] == "--" {
				argv = argv[1:]
			}
			if len(argv) == 0 {
				return fmt.Errorf("exec %s: no command after --", args[0])
			}
			return runExec(args[0], argv, &fl)
		},
	}
	// Everything after NODE belongs to the command, flags included.
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVar(&fl.stateDir, "state-dir", lab.DefaultStateRoot, "state directories of labs live under `DIR`")
	rootCmd.AddCommand(cmd)
}

func runExec(ref string, argv []string, fl *execFlags) error {
	_, _, ns, err := lab.ResolveNode(fl.stateDir, ref)
	if err != nil {
		return err
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The command stays in emulab's process group, so a terminal's Ctrl-C
	// reaches it directly; passing SIGINT on as well would deliver it
	// twice. Without a terminal, SIGINT is passed on like the others.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	_, termErr := unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS)
	fromTerminal := termErr == nil
	if err := lab.StartIn(ns, c); err != nil {
		return fmt.Errorf("exec %s: %w", ref, withRootHint(err))
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == os.Interrupt && fromTerminal {
					continue
				}
				_ = c.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = c.Wait()
	close(done)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return &exitError{code: code, err: fmt.Errorf("%s: %s: %w", ref, argv[0], err)}
	}
	return err
}
