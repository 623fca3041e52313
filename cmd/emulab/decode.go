package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/dissect"
)

func init() {
	rootCmd.AddCommand(&cobra.Command{
		Use:   "decode FILE",
		Short: "Print every frame's headers as one JSON object per line",
		Long: `decode reads a pcap, pcapng or ERF (pcap link type 197) capture and prints one
JSON object per frame: Ethernet, 802.1Q, IPv4/IPv6, UDP, PFC/PAUSE, IB LRH, GRH
and link packets, the BTH and every extended transport header under their IBTA
field names, and the CRC verdicts icrc_ok, vcrc_ok and lpcrc_ok.

A frame that does not decode is printed with an "error" member; decode goes on
with the next frame and exits with status 1, naming the first such frame, its
header and field (frame 7: BTH.PadCnt: inconsistent: ...).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			return dissect.Decode(f, cmd.OutOrStdout())
		},
	})
}
