//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/lab"
)

type downFlags struct {
	stateDir string
	grace    time.Duration
}

func init() {
	var fl downFlags
	cmd := &cobra.Command{
		Use:   "down LAB|FILE",
		Short: "Remove a lab: daemons, namespaces, TAPs, sockets, state (root)",
		Long: `down removes everything up created for a lab, named by its name or by its
lab file: it stops the daemons (SIGTERM, then SIGKILL after --grace), kills
whatever else runs in the lab's namespaces (shells from exec), deletes the
namespaces (their interfaces and TAPs go with them), the socket files and the
state directory.

It works from the state directory alone, so it cleans up after kill -9 of any
daemon or of emulab itself, in the middle of up or after it. A state record
lost or damaged by hand is made up for from the rest of the state directory
(up.json, the pidfiles) and, with no state directory at all, from the
namespaces named after the lab that no other lab records. A lab that is not
up is not an error; for one that is up under another state directory down
says so, with the down command and its --state-dir, and leaves it running:
the exit status is 0 in both cases, so a script that must know the lab is
gone checks the message or ip netns list.`,
		Example: `  sudo bin/emulab down two-hosts
  sudo bin/emulab down examples/two-hosts.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDown(cmd, args[0], &fl)
		},
	}
	cmd.Flags().StringVar(&fl.stateDir, "state-dir", lab.DefaultStateRoot, "state directories of labs live under `DIR`")
	cmd.Flags().DurationVar(&fl.grace, "grace", lab.DefaultGrace, "time between SIGTERM and SIGKILL for each daemon")
	rootCmd.AddCommand(cmd)
}

func runDown(cmd *cobra.Command, arg string, fl *downFlags) error {
	name, err := labNameArg(arg)
	if err != nil {
		return fmt.Errorf("%w\n(`%s` lists the labs)", err, lab.StatusCommand(fl.stateDir, ""))
	}
	start := time.Now()
	dir := filepath.Join(fl.stateDir, name)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		left := lab.LeftoverNamespaces(fl.stateDir, name)
		if len(left) == 0 {
			// Up under another state directory: a bare "not up,
			// nothing to remove" left the user believing it gone,
			// and the next up said it was already up. Not an error:
			// down here is done, and must not touch that lab.
			if other := lab.UpElsewhere(fl.stateDir, name); other != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "lab %s is not up under %s: nothing removed; it is up under state directory %s: `%s` takes it down\n",
					name, fl.stateDir, other, lab.DownCommand(other, name))
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lab %s is not up (no %s): nothing to remove\n", name, dir)
			return nil
		}
		fmt.Fprintf(cmd.OutOrStdout(), "lab %s has no state directory (%s) but left %d namespace(s) named after it (%s): removing them and what runs in them\n",
			name, dir, len(left), strings.Join(left, " "))
	}
	if err := lab.Down(fl.stateDir, name, fl.grace); err != nil {
		if errors.Is(err, lab.ErrLabLocked) {
			return fmt.Errorf("lab %s: an emulab up or down is running on it: %w", name, err)
		}
		return fmt.Errorf("down %s: %w", name, withRootHint(err))
	}
	fmt.Fprintf(cmd.OutOrStdout(), "lab %s is down (%.2fs)\n", name, time.Since(start).Seconds())
	return nil
}

// labNameArg takes a lab name, or a lab file (a path, or a name ending in
// .yaml/.yml) whose name: it reads.
func labNameArg(arg string) (string, error) {
	ext := strings.ToLower(filepath.Ext(arg))
	isFile := ext == ".yaml" || ext == ".yml"
	if !isFile {
		if fi, err := os.Stat(arg); err == nil && fi.Mode().IsRegular() {
			isFile = true
		}
	}
	if !isFile {
		if _, err := lab.NamespaceName(arg, "x"); err != nil {
			return "", fmt.Errorf("%q is neither a lab file nor a lab name: %w", arg, err)
		}
		return arg, nil
	}
	spec, err := lab.Load(arg)
	if err != nil {
		return "", fmt.Errorf("%w\n(the lab file does not load: name the lab instead, e.g. `emulab down NAME`)", err)
	}
	return spec.Name, nil
}
