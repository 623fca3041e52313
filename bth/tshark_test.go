package bth

import (
	"math/bits"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestTshark has Wireshark decode every captured frame in testdata and
// compares its reading of the transport headers with Packet.Decode. It
// needs tshark; with CI=true a missing tshark is a failure.
func TestTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tshark not found (CI=true requires it)")
		}
		t.Skip("tshark not found")
	}
	fields := []string{"frame.number", "infiniband.bth.opcode", "infiniband.bth.padcnt", "infiniband.bth.destqp",
		"infiniband.bth.psn", "infiniband.invariant.crc", "infiniband.reth.dmalen", "infiniband.aeth.msn",
		"infiniband.deth.q_key", "infiniband.immdt", "infiniband.ieth", "_ws.malformed"}
	for _, file := range []string{"testdata/rocev2_ipv4.pcap", "testdata/rocev2_ipv6.pcap",
		"testdata/opcodes_ipv4.pcap", "testdata/opcodes_ipv6.pcap"} {
		cfg := t.TempDir() // hermetic: no user preferences
		args := []string{"-n", "-r", file, "-T", "fields", "-E", "occurrence=f"}
		for _, f := range fields {
			args = append(args, "-e", f)
		}
		// Wireshark's payload heuristics misread opaque RDMA payloads
		// (an empty SEND shows as a malformed RPC-over-RDMA message).
		for _, p := range []string{"rpcordma", "smb_direct", "nvme-rdma", "iser", "lnet", "smc",
			"infiniband_sdp", "fcoib", "infiniband.eoib"} {
			args = append(args, "--disable-protocol", p)
		}
		for _, h := range []string{"eth_over_ib", "mellanox_eoib", "rpcrdma_infiniband"} {
			args = append(args, "--disable-heuristic", h)
		}
		cmd := exec.Command(tshark, args...)
		cmd.Env = append(os.Environ(), "WIRESHARK_CONFIG_DIR="+cfg, "HOME="+cfg, "XDG_CONFIG_HOME="+cfg)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: tshark: %v", file, err)
		}
		_, frames := readPcap(t, file)
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		if len(lines) != len(frames) {
			t.Fatalf("%s: tshark printed %d lines for %d frames", file, len(lines), len(frames))
		}
		for i, line := range lines {
			col := strings.Split(line, "\t")
			if len(col) != len(fields) {
				t.Fatalf("%s: line %q", file, line)
			}
			var p Packet
			if err := p.Decode(frames[i], VerifyICRC); err != nil {
				t.Fatalf("%s frame %d: %v", file, i+1, err)
			}
			num := func(c int) (uint64, bool) {
				if col[c] == "" {
					return 0, false
				}
				base := 0
				if c == 9 || c == 10 { // byte fields, bare hex
					base = 16
				}
				v, err := strconv.ParseUint(col[c], base, 64)
				if err != nil {
					t.Fatalf("%s frame %d: field %s = %q", file, i+1, fields[c], col[c])
				}
				return v, true
			}
			check := func(c int, present bool, want uint64) {
				t.Helper()
				got, ok := num(c)
				if ok != present || got != want {
					t.Errorf("%s frame %d (%s): tshark %s = %q, want %v/%d", file, i+1, p.Info.Name, fields[c], col[c], present, want)
				}
			}
			if col[11] != "" {
				t.Errorf("%s frame %d: tshark reports it malformed", file, i+1)
			}
			check(1, true, uint64(p.BTH.OpCode()))
			check(2, true, uint64(p.BTH.PadCount()))
			check(3, true, uint64(p.BTH.DestQP()))
			check(4, true, uint64(p.BTH.PSN()))
			// Wireshark reads the ICRC bytes as a big-endian number and
			// does not show it at all for the CNP opcode it does not know.
			check(5, p.BTH.OpCode() != CNPOpcode, uint64(bits.ReverseBytes32(p.ICRC))*boolU(p.BTH.OpCode() != CNPOpcode))
			if p.RETH != nil {
				check(6, true, uint64(p.RETH.DMALen()))
			}
			if p.AETH != nil {
				check(7, true, uint64(p.AETH.MSN()))
			}
			if p.DETH != nil {
				check(8, true, uint64(p.DETH.QKey()))
			}
			check(9, p.ImmDt != nil, uint64(immOr0(p.ImmDt)))
			check(10, p.IETH != nil, uint64(iethOr0(p.IETH)))
		}
	}
}

func boolU(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func immOr0(b ImmDt) uint32 {
	if b == nil {
		return 0
	}
	return b.Value()
}

func iethOr0(b IETH) uint32 {
	if b == nil {
		return 0
	}
	return b.RKey()
}
