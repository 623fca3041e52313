package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/lab"
)

func init() {
	var name, rate, delay, lossless, out string
	var mtu, priority int
	var traffic lab.TopoTraffic
	cmd := &cobra.Command{
		Use:   "topo SHAPE",
		Short: "Write a lab file for a predefined topology (mininet's --topo shapes, and leaf-spine)",
		Long: `topo writes the lab file of a predefined topology, to edit or to run as it is
with up or sim. The shapes are mininet's, plus the leaf-spine of RDMA fabrics;
arguments are positional or key=value:

  single,N                 one switch s1, hosts h1..hN
  linear,K[,N]             switches s1..sK in a line, N hosts on each (default 1)
  tree,depth=D,fanout=F    a tree of switches D deep (default 1), F below each (default 2)
  leafspine,L,S[,H]        leaves leaf1..leafL, each linked to every spine
                           spine1..spineS, H hosts per leaf (default 2)

Hosts are emulated RNICs (kind nic), numbered h1, h2, ... in order. A shape
has at most 256 hosts, 256 switches and 1024 links. --traffic adds raw RDMA
WRITE flows over every host, which sim runs (RoCE packets with real PSNs at
the link's rate or --load, no NIC: nothing acknowledges them or reacts to
ECN; for NICs with DCQCN, edit the entry into an RDMA flow with op: write,
as docs/lab-file.md shows):

  incast      every other host writes to h1
  pairs       the first half of the hosts to the second (h1 to the first of
              the second half, and so on)
  all_to_all  every host to every other
  random      every host, each message to a random other host

The file is checked as up and sim check it before it is written.`,
		Example: `  emulab topo single,4 > star.yaml
  emulab topo leafspine,4,2,4 --lossless 3 -o fabric.yaml && sudo emulab up fabric.yaml
  emulab topo tree,depth=2,fanout=3 --rate 25G --delay 2us | emulab sim /dev/stdin
  emulab topo leafspine,4,2,4 --lossless 3 --traffic incast --size 256KiB | emulab sim /dev/stdin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" {
				name, _, _ = strings.Cut(args[0], ",")
			}
			t, err := lab.ParseTopo(name, args[0])
			if err != nil {
				return &exitError{code: exitBadLabFile, err: err}
			}
			if mtu <= 0 {
				return &exitError{code: exitBadLabFile, err: fmt.Errorf("--mtu %d: a link's MTU is positive (RoCE 576..9216)", mtu)}
			}
			t.Defaults = lab.LinkOpts{Rate: rate, Delay: delay, MTU: mtu}
			// The file's other patterns (one, fanout) take one source
			// or destination, which a flag over every host cannot be.
			if p := traffic.Pattern; p != "" && !slices.Contains(topoPatterns, p) {
				return &exitError{code: exitBadLabFile, err: fmt.Errorf("--traffic %q: one of %s", p, strings.Join(topoPatterns, ", "))}
			}
			t.Traffic = traffic
			t.Traffic.Priority = &priority
			// Without the flag the file leaves pfc_enable to the switches'
			// built-in 3,4, so priority 3 is lossless either way; "none"
			// writes an empty pfc_enable, the lossy fabric to compare with.
			if lossless == "none" {
				t.Lossless = []int{}
			} else if lossless != "" {
				t.Lossless = []int{}
				for _, p := range strings.Split(lossless, ",") {
					n, err := strconv.Atoi(strings.TrimSpace(p))
					if err != nil || n < 0 || n > 7 || slices.Contains(t.Lossless, n) {
						return &exitError{code: exitBadLabFile, err: fmt.Errorf("--lossless %q: priorities 0 to 7, comma-separated, each once, or none", lossless)}
					}
					t.Lossless = append(t.Lossless, n)
				}
			}
			if _, err := t.Spec(); err != nil {
				return &exitError{code: exitBadLabFile, err: fmt.Errorf("topology %s: %w", args[0], topoFlagErrors(err))}
			}
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(t.YAML())
				return err
			}
			return os.WriteFile(out, t.YAML(), 0o644)
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the lab's name (default: the shape's, e.g. leafspine)")
	cmd.Flags().StringVar(&rate, "rate", "100G", "every link's rate")
	cmd.Flags().StringVar(&delay, "delay", "1us", "every link's propagation delay")
	cmd.Flags().IntVar(&mtu, "mtu", 4200, "every link's MTU (4200 carries a 4096-byte RDMA payload)")
	cmd.Flags().StringVar(&lossless, "lossless", "", "priorities made lossless (PFC) on every switch, e.g. 3, or none (default: the switches' built-in 3,4)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the file here (default: standard output)")
	cmd.Flags().StringVar(&traffic.Pattern, "traffic", "", "add raw RDMA WRITE flows over every host: incast, pairs, all_to_all or random")
	cmd.Flags().StringVar(&traffic.Size, "size", "64KiB", "--traffic: the message size")
	cmd.Flags().IntVar(&priority, "priority", 3, "--traffic: the priority the messages are sent on")
	cmd.Flags().Float64Var(&traffic.Load, "load", 0, "--traffic: offered load per sender as a fraction of its link rate, Poisson arrivals (0: back to back)")
	rootCmd.AddCommand(cmd)
}
