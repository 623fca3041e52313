package nic

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/wire/capture"
)

// Wireshark, which nobody here wrote, reads our PortCounters answer with
// the values our decoder reads.
func TestIBPerfMgtTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tshark not found (CI=true requires it)")
		}
		t.Skip("tshark not found")
	}
	p := ibPair(t, 1024, 1)
	a, b := setupRC(t, p, qpOpts{})
	if err := a.qp.PostSend(writeWR(a, b, 1, 20000)); err != nil {
		t.Fatal(err)
	}
	p.l.run(clock.Millisecond, 1<<20, nil)
	var resp []byte
	p.ba.tap = func(f *frame.Frame) {
		if len(f.Data) > mad.Size {
			resp = bytes.Clone(f.Data)
		}
	}
	var got mad.PortCountersFields
	p.a.SetGMPDeliver(func(m mad.MAD, _ uint16) { got = mad.PortCounters(m[mad.PerfDataOffset:]).Fields() })
	m := make(mad.MAD, mad.Size)
	m.Encode(&mad.Fields{BaseVersion: 1, MgmtClass: mad.ClassPerfMgt, ClassVersion: 1, Method: mad.MethodGet, TransactionID: 1, AttributeID: mad.AttrPortCounters})
	m[mad.PerfDataOffset+1] = 1
	p.a.SendGMP(2, 0, m)
	p.l.run(p.l.now+clock.Millisecond, 1<<20, nil)
	if resp == nil || got.RcvPkts == 0 {
		t.Fatalf("no PortCounters answer (%+v)", got)
	}
	var buf bytes.Buffer
	pw, _ := capture.NewPcapWriter(&buf, capture.LinkTypeERF)
	if err := pw.WriteERF(time.Unix(1700000000, 0), capture.ERFTypeInfiniBand, 0, resp); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	file := filepath.Join(t.TempDir(), "gmp.pcap")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tshark, "-r", file, "-T", "fields", "-E", "separator=,",
		"-e", "infiniband.portcounters.portxmitdata", "-e", "infiniband.portcounters.portrcvdata",
		"-e", "infiniband.portcounters.portxmitpkts", "-e", "infiniband.portcounters.portrcvpkts").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	want := fmt.Sprintf("%d,%d,%d,%d", got.XmitData, got.RcvData, got.XmitPkts, got.RcvPkts)
	if strings.TrimSpace(string(out)) != want {
		t.Errorf("tshark reads %q, we read %q", strings.TrimSpace(string(out)), want)
	}
}
