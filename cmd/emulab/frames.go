package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/zoo"
)

func init() {
	var out, format, ib string
	cmd := &cobra.Command{
		Use:   "frames -o FILE [--format pcap|pcapng] [--ib FILE]",
		Short: "Write one frame of every kind the emulator encodes (the frame zoo)",
		Long: `frames writes the frame zoo: RoCEv2 over IPv4 and IPv6 for every RC, UC and UD
opcode, every AETH syndrome, CNPs, ECN-CE, FECN, VLAN-tagged and padded frames,
PFC and PAUSE to FILE (pcapng with a comment naming each frame, or pcap); and
native InfiniBand data and link flow-control packets to the --ib file, as ERF
records (pcap link type 197, which Wireshark 4.0 opens).

The format of FILE follows its extension (.pcap or .pcapng) unless --format
says otherwise; --ib files ending in .pcapng are pcapng, others pcap.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" && ib == "" {
				return fmt.Errorf("frames: -o FILE (or --ib FILE) is required")
			}
			if out != "" {
				f, err := captureFormat(out, format)
				if err != nil {
					return err
				}
				if err := writeZoo(out, f, zoo.Ethernet(), zoo.WritePcap); err != nil {
					return err
				}
			}
			if ib != "" {
				f, err := captureFormat(ib, "")
				if err != nil {
					return err
				}
				if err := writeZoo(ib, f, zoo.IB(), zoo.WriteERF); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "Ethernet capture to write (RoCEv2, PFC, PAUSE)")
	cmd.Flags().StringVar(&format, "format", "", "pcap or pcapng (default: from the extension, pcapng otherwise)")
	cmd.Flags().StringVar(&ib, "ib", "", "capture to write the native InfiniBand packets to, as ERF records")
	rootCmd.AddCommand(cmd)
}

// captureFormat returns "pcap" or "pcapng" for path: the explicit format if
// given, else the extension, else pcapng.
func captureFormat(path, explicit string) (string, error) {
	switch explicit {
	case "pcap", "pcapng":
		return explicit, nil
	case "":
	default:
		return "", fmt.Errorf("frames: --format %q: want pcap or pcapng", explicit)
	}
	if strings.EqualFold(filepath.Ext(path), ".pcap") {
		return "pcap", nil
	}
	return "pcapng", nil
}

// writeZoo writes entries to path as pcapng, or with classic (the pcap
// writer for their link type).
func writeZoo(path, format string, entries []zoo.Entry, classic func(io.Writer, []zoo.Entry) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if format == "pcapng" {
		err = zoo.WritePcapNG(f, entries)
	} else {
		err = classic(f, entries)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("frames: %s: %w", path, err)
	}
	return nil
}
