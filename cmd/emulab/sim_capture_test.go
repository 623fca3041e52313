package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

// captureIB runs ib-two-hosts with --capture and returns the directory.
func captureIB(t *testing.T, pad bool) string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"../../examples/ib-two-hosts.yaml", "-q", "--capture", dir}
	if pad {
		args = append(args, "--capture-pad-links")
	}
	out, err := runSimCmd(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "into 2 files in "+dir) {
		t.Errorf("summary does not mention the capture:\n%s", out)
	}
	return dir
}

// TestSimCaptureIB: one ERF file per link; data packets are type 21 with
// good ICRC and VCRC, SMPs among them (VL15, QP0) from the SM's sweep;
// link packets are type 25, valid, 6 bytes (or 64 with the first 6 the
// packet when padded); the ERF interface tells the two directions apart.
func TestSimCaptureIB(t *testing.T) {
	for _, pad := range []bool{false, true} {
		dir := captureIB(t, pad)
		for _, name := range []string{"h1-ib0_sw1-p1.pcap", "h2-ib0_sw1-p2.pcap"} {
			format, recs := readAll(t, filepath.Join(dir, name))
			if format != capture.FormatPcap || len(recs) == 0 {
				t.Fatalf("%s: format %v, %d records", name, format, len(recs))
			}
			var smps, data, links int
			ifaces := map[uint8]int{}
			var pkt mad.Packet
			var hdr bth.IBPacket
			for i, r := range recs {
				if r.LinkType != capture.LinkTypeERF {
					t.Fatalf("%s record %d: link type %v", name, i, r.LinkType)
				}
				ifaces[r.ERF.Iface()]++
				switch r.ERF.Type {
				case capture.ERFTypeInfiniBandLink:
					links++
					want := wire.IBLinkSize
					if pad {
						want = 64
					}
					if len(r.Data) != want {
						t.Errorf("%s record %d: link record of %d bytes, want %d", name, i, len(r.Data), want)
					}
					if err := wire.IBLink(r.Data[:wire.IBLinkSize]).Validate(0); err != nil {
						t.Errorf("%s record %d: %v", name, i, err)
					}
				case capture.ERFTypeInfiniBand:
					if wire.LRH(r.Data).VL() == 15 {
						smps++
						if err := mad.DecodePacket(r.Data, &pkt, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
							t.Errorf("%s record %d: SMP: %v", name, i, err)
						}
						continue
					}
					data++
					if err := hdr.Decode(r.Data, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
						t.Errorf("%s record %d: %v", name, i, err)
					}
				default:
					t.Errorf("%s record %d: ERF type %d", name, i, r.ERF.Type)
				}
			}
			t.Logf("pad %v %s: %d SMPs, %d data packets, %d link packets, by direction %v", pad, name, smps, data, links, ifaces)
			if smps == 0 || data == 0 || links == 0 || ifaces[0] == 0 || ifaces[1] == 0 || len(ifaces) != 2 {
				t.Errorf("%s: %d SMPs, %d data, %d link packets, directions %v", name, smps, data, links, ifaces)
			}
		}
	}
}

// TestSimCaptureRoCE: a RoCE lab's captures are Ethernet frames.
func TestSimCaptureRoCE(t *testing.T) {
	dir := t.TempDir()
	if out, err := runSimCmd(t, "../../examples/two-hosts.yaml", "-q", "--capture", dir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	_, recs := readAll(t, filepath.Join(dir, "h1-eth0_sw1-p1.pcap"))
	if len(recs) == 0 {
		t.Fatal("no frames")
	}
	for i, r := range recs {
		if r.LinkType != capture.LinkTypeEthernet || len(r.Data) < 14 {
			t.Fatalf("record %d: %v, %d bytes", i, r.LinkType, len(r.Data))
		}
	}
}

// TestSimCaptureTshark opens the captures with Wireshark's dissectors. On
// the padded capture nothing may be malformed, the SM's directed-route
// SMPs decode as SubnGet/SubnSet/SubnGetResp, and tshark's FCTBS / VL /
// FCCL equal ours for every link packet. On the capture as written only
// the 6-byte link records may be Malformed (Wireshark 4.0 reads 8 or more
// bytes there; see capture.go). It needs tshark: with CI=true a missing
// tshark is a failure.
func TestSimCaptureTshark(t *testing.T) {
	ts, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tshark not found (CI=true requires it)")
		}
		t.Skip("tshark not found")
	}
	fields := func(path string, f ...string) [][]string {
		args := []string{"-r", path, "-T", "fields", "-E", "separator=|"}
		for _, x := range f {
			args = append(args, "-e", x)
		}
		out, err := exec.Command(ts, args...).Output()
		if err != nil {
			t.Fatalf("tshark %s: %v", path, err)
		}
		var rows [][]string
		for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			rows = append(rows, strings.Split(l, "|"))
		}
		return rows
	}
	cols := []string{"frame.protocols", "_ws.malformed", "erf.types.type", "infiniband_link.fctbs", "infiniband_link.vl", "infiniband_link.fccl", "infiniband.mad.method", "infiniband.mad.attributeid"}

	padded := filepath.Join(captureIB(t, true), "h1-ib0_sw1-p1.pcap")
	_, recs := readAll(t, padded)
	rows := fields(padded, cols...)
	if len(rows) != len(recs) {
		t.Fatalf("tshark read %d packets, the file has %d", len(rows), len(recs))
	}
	methods := map[string]int{}
	var links int
	for i, row := range rows {
		if row[1] != "" || strings.Contains(row[0], "malformed") {
			t.Errorf("padded packet %d: Malformed (%s)", i+1, row[0])
		}
		r := recs[i]
		if r.ERF.Type == capture.ERFTypeInfiniBandLink {
			links++
			l := wire.IBLink(r.Data)
			want := []string{strconv.Itoa(int(l.FCTBS())), strconv.Itoa(int(l.VL())), strconv.Itoa(int(l.FCCL()))}
			if row[3] != want[0] || row[4] != want[1] || row[5] != want[2] {
				t.Errorf("packet %d: tshark FCTBS/VL/FCCL %v, ours %v", i+1, row[3:6], want)
			}
			continue
		}
		if wire.LRH(r.Data).VL() == 15 {
			if row[7] == "" {
				t.Errorf("packet %d: an SMP without a MAD attribute in tshark", i+1)
			}
			methods[row[6]]++
		}
	}
	t.Logf("tshark on the padded capture: %d link packets, SMP methods %v", links, methods)
	// Get (0x01), Set (0x02), GetResp (0x81): the SM's sweep both ways.
	if links == 0 || methods["0x01"] == 0 || methods["0x02"] == 0 || methods["0x81"] == 0 {
		t.Errorf("%d link packets, SMP methods %v", links, methods)
	}

	plain := filepath.Join(captureIB(t, false), "h1-ib0_sw1-p1.pcap")
	_, recs = readAll(t, plain)
	rows = fields(plain, cols...)
	if len(rows) != len(recs) {
		t.Fatalf("tshark read %d packets, the file has %d", len(rows), len(recs))
	}
	for i, row := range rows {
		malformed := row[1] != "" || strings.Contains(row[0], "malformed")
		if malformed && recs[i].ERF.Type != capture.ERFTypeInfiniBandLink {
			t.Errorf("packet %d (%s): Malformed", i+1, row[0])
		}
	}
}
