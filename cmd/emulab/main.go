// Command emulab is the user's entry point: it writes and decodes frame
// captures, runs labs in the deterministic simulator, and (later) brings labs
// up in network namespaces.
//
// Each subcommand lives in its own file and registers itself with rootCmd in
// an init function, so adding a command never edits another's file.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

var rootCmd = &cobra.Command{
	Use:   "emulab",
	Short: "RoCEv2 and InfiniBand fabric emulator: frames, simulation, labs",
	Long: `emulab drives the emufabric emulator: RoCEv2 and InfiniBand fabrics whose
every frame is real bytes, in a deterministic simulator or as a real lab of
network namespaces.

  emulab demo                       bring the two-hosts lab up, run traffic, take it down (root)
  emulab up examples/two-hosts.yaml a lab in namespaces: emuswitch, emunic, TAPs (root)
  emulab perf write_bw h1 h2        perftest-style RDMA between two hosts of a lab that is up
  emulab capture sw1:p1 -w -        live pcapng, with what the switch decided per frame
  emulab check my-lab.yaml          a lab file's problems by line, or what up would build
  emulab sim examples/incast.yaml   the same kind of file in the deterministic simulator
  emulab ib nodes examples/ib-fat-tree.yaml  the subnet manager's sweep of an IB lab
  emulab frames -o zoo.pcapng       one frame of every kind the emulator encodes
  emulab decode zoo.pcapng          every frame's headers as JSON, one object per line`,
	SilenceUsage:  true,
	SilenceErrors: true,
}

func main() {
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "emulab:", err)
		os.Exit(exitCode(err))
	}
}

// exitError carries a specific exit status out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	if e, ok := err.(*exitError); ok {
		return e.code
	}
	return 1
}
