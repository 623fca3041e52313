package mad_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/wire/capture"
)

// TestTshark writes SMP packets into an ERF capture (record type 21, as
// ibdump does) and checks that Wireshark's InfiniBand dissector reads back
// the MAD header, the directed-route fields and the attributes we encoded,
// with nothing malformed and no expert information. It needs tshark; with
// CI=true a missing tshark is a failure.
//
// Wireshark 4.0's "D (Direction Bit)" field (infiniband.smpdirected.d)
// is a 64-bit field whose mask does not fall on the status word, so it
// always reads 0; the D bit is checked through the status field
// (infiniband.smpdirected.smpstatus, where it is bit 15).
func TestTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tshark not found (CI=true requires it)")
		}
		t.Skip("tshark not found")
	}
	// A leaf switch (8 ports, link up on 3 and 5) and the SMPs an SM
	// exchanges with it two hops away.
	sw := mad.NewAgent(mad.AgentConfig{NodeType: mad.NodeTypeSwitch, NumPorts: 8, NodeGUID: 0x0002c90300001234, Description: "leaf1"})
	sw.SetLinkUp(3, true)
	sw.SetLinkUp(5, true)
	type rec struct {
		smp      mad.SMP
		dlid     uint16
		slid     uint16
		want     map[string]string
		wantList map[string][]byte // every occurrence of a repeated field
	}
	var recs []rec
	// 1: the request as it leaves the SM (hop pointer 1 of 2).
	req := getSMP(mad.AttrNodeInfo, 0, 1, 3)
	req.MAD().SetTransactionID(0x1122334455667788)
	recs = append(recs, rec{smp: append(mad.SMP(nil), req...), dlid: mad.PermissiveLID, slid: mad.PermissiveLID, want: map[string]string{
		"infiniband.mad.baseversion": "1", "infiniband.mad.mgmtclass": "0x81", "infiniband.mad.classversion": "1",
		"infiniband.mad.method": "0x01", "infiniband.mad.attributeid": "0x0011", "infiniband.mad.transactionid": "0x1122334455667788",
		"infiniband.smpdirected.smpstatus": "0", "infiniband.smpdirected.hoppointer": "1", "infiniband.smpdirected.hopcount": "2",
		"infiniband.smpdirected.drslid": "0xffff", "infiniband.smpdirected.drdlid": "0xffff",
	}})
	// 2: the switch's GetResp (it is the second hop and got it on port 3).
	resp := append(mad.SMP(nil), req...)
	resp.SetHopPointer(2)
	if act := sw.Handle(3, resp, false); act.Verdict != mad.SendPort || act.Port != 3 {
		t.Fatalf("switch agent: %+v", act)
	}
	recs = append(recs, rec{smp: resp, dlid: mad.PermissiveLID, slid: mad.PermissiveLID, want: map[string]string{
		"infiniband.mad.method": "0x81", "infiniband.smpdirected.smpstatus": "0x8000", "infiniband.smpdirected.hoppointer": "2",
		"infiniband.mad.transactionid": "0x1122334455667788",
		"infiniband.nodeinfo.nodetype": "2", "infiniband.nodeinfo.numports": "8", "infiniband.nodeinfo.nodeguid": "0x0002c90300001234",
		"infiniband.nodeinfo.portguid": "0x0002c90300001234", "infiniband.nodeinfo.localportnum": "3",
		"infiniband.nodeinfo.baseversion": "1", "infiniband.nodeinfo.classversion": "1",
	}})
	// 3: Set PortInfo (LID 6 and Armed on port 0) and its GetResp.
	pi := make(mad.PortInfo, mad.PortInfoSize)
	pi.Encode(&mad.PortInfoFields{LID: 6, MasterSMLID: 1, PortState: mad.PortStateArmed})
	set := setSMP(mad.AttrPortInfo, 0, pi, 1, 3)
	recs = append(recs, rec{smp: append(mad.SMP(nil), set...), dlid: mad.PermissiveLID, slid: 1, want: map[string]string{
		"infiniband.mad.method": "0x02", "infiniband.mad.attributeid": "0x0015", "infiniband.portinfo.lid": "0x0006",
		"infiniband.portinfo.mastersmlid": "0x0001", "infiniband.portinfo.portstate": "0x3",
	}})
	set.SetHopPointer(2)
	sw.Handle(3, set, false)
	recs = append(recs, rec{smp: set, dlid: mad.PermissiveLID, slid: 6, want: map[string]string{
		"infiniband.mad.method": "0x81", "infiniband.smpdirected.smpstatus": "0x8000", "infiniband.portinfo.lid": "0x0006",
		"infiniband.portinfo.portstate": "0x3", "infiniband.portinfo.localportnum": "0x00",
	}})
	// 4: GetResp PortInfo of external port 5.
	g := getSMP(mad.AttrPortInfo, 5, 1, 3)
	g.SetHopPointer(2)
	sw.Handle(3, g, false)
	recs = append(recs, rec{smp: g, dlid: mad.PermissiveLID, slid: 6, want: map[string]string{
		"infiniband.mad.attributemodifier": "0x00000005", "infiniband.portinfo.portstate": "0x2",
		"infiniband.portinfo.portphysicalstate": "0x5", "infiniband.portinfo.localportnum": "0x05",
		"infiniband.portinfo.linkwidthactive": "0x02", "infiniband.portinfo.mtucap": "0x5", "infiniband.portinfo.neighbormtu": "0x5",
	}})
	// 5: Set LinearForwardingTable block 0.
	lft := make([]byte, 64)
	for i := range lft {
		lft[i] = mad.LFTNoPort
	}
	lft[0], lft[1], lft[2] = 0, 3, 5
	recs = append(recs, rec{smp: setSMP(mad.AttrLinearFwdTable, 0, lft, 1, 3), dlid: mad.PermissiveLID, slid: 1,
		want:     map[string]string{"infiniband.mad.attributeid": "0x0019"},
		wantList: map[string][]byte{"infiniband.linearforwardingtable.port": lft}})
	// 6: a LID-routed GetResp SwitchInfo.
	var lf mad.SMPFields
	lf.MgmtClass, lf.Method, lf.AttributeID, lf.TransactionID, lf.MKey = mad.ClassSubnLID, mad.MethodGet, mad.AttrSwitchInfo, 9, 0xAB
	ls := make(mad.SMP, mad.Size)
	ls.Encode(&lf)
	if act := sw.Handle(3, ls, true); act.Verdict != mad.SendLID {
		t.Fatalf("LID-routed: %+v", act)
	}
	recs = append(recs, rec{smp: ls, dlid: 1, slid: 6, want: map[string]string{
		"infiniband.mad.mgmtclass": "0x01", "infiniband.mad.method": "0x81", "infiniband.smplid.mkey": "0x00000000000000ab",
		"infiniband.switchinfo.linearfdbcap": "0xc000", "infiniband.switchinfo.portstatechange": "0x1",
		"infiniband.switchinfo.lifetimevalue": "0x12",
	}})

	dir := t.TempDir()
	file := filepath.Join(dir, "smp.pcap")
	var buf bytes.Buffer
	w, err := capture.NewPcapWriter(&buf, capture.LinkTypeERF)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1700000000, 0)
	for i, r := range recs {
		pkt := smpPacket(t, r.smp, r.dlid, r.slid)
		if err := w.WriteERF(ts.Add(time.Duration(i)*time.Microsecond), capture.ERFTypeInfiniBand, 0, pkt); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{"_ws.malformed": true, "_ws.expert": true}
	for _, r := range recs {
		for k := range r.want {
			names[k] = true
		}
		for k := range r.wantList {
			names[k] = true
		}
	}
	var fields []string
	for k := range names {
		fields = append(fields, k)
	}
	cfg := t.TempDir()
	args := []string{"-n", "-r", file, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,", "-E", "separator=|"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	cmd := exec.Command(tshark, args...)
	cmd.Env = append(os.Environ(), "WIRESHARK_CONFIG_DIR="+cfg, "HOME="+cfg, "XDG_CONFIG_HOME="+cfg)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(recs) {
		t.Fatalf("tshark printed %d lines for %d records:\n%s", len(lines), len(recs), out)
	}
	for i, line := range lines {
		col := strings.Split(line, "|")
		got := map[string]string{}
		for j, f := range fields {
			got[f] = col[j]
		}
		if got["_ws.malformed"] != "" || got["_ws.expert"] != "" {
			t.Errorf("frame %d: malformed %q expert %q", i+1, got["_ws.malformed"], got["_ws.expert"])
		}
		for k, want := range recs[i].want {
			if !sameNumber(got[k], want) {
				t.Errorf("frame %d: %s = %q, want %s", i+1, k, got[k], want)
			}
		}
		for k, want := range recs[i].wantList {
			vals := strings.Split(got[k], ",")
			ok := len(vals) == len(want)
			for j := 0; ok && j < len(vals); j++ {
				ok = sameNumber(vals[j], strconv.Itoa(int(want[j])))
			}
			if !ok {
				t.Errorf("frame %d: %s = %q, want %v", i+1, k, got[k], want)
			}
		}
	}
}

// sameNumber compares tshark's rendering (decimal or 0x hex) with want.
func sameNumber(got, want string) bool {
	if got == want {
		return true
	}
	a, err1 := strconv.ParseUint(got, 0, 64)
	b, err2 := strconv.ParseUint(want, 0, 64)
	return err1 == nil && err2 == nil && a == b
}
