package nic

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/frame"
)

func TestMlnxQos(t *testing.T) {
	pfc, err := ParsePFC("0,0,0,1,0,0,0,0")
	if err != nil || !pfc[3] || pfc[2] {
		t.Fatalf("%v %v", pfc, err)
	}
	for _, bad := range []string{"0,0,0,1", "0,0,0,2,0,0,0,0", ""} {
		if _, err := ParsePFC(bad); err == nil {
			t.Errorf("ParsePFC(%q) accepted", bad)
		}
	}
	if tr, err := ParseTrust("DSCP"); err != nil || tr != TrustDSCP {
		t.Errorf("trust %v %v", tr, err)
	}
	if _, err := ParseTrust("cos"); err == nil {
		t.Error("trust cos accepted")
	}
	m := defaultDSCP2Prio()
	for _, a := range []string{"set,26,5", "set,46,3"} {
		if err := ApplyDSCP2Prio(&m, a); err != nil {
			t.Fatal(err)
		}
	}
	if m[26] != 5 || m[46] != 3 || m[25] != 3 {
		t.Errorf("map %v", m[24:48])
	}
	if err := ApplyDSCP2Prio(&m, "del,26,5"); err != nil || m[26] != 3 {
		t.Errorf("del: %v %d", err, m[26])
	}
	for _, bad := range []string{"set,64,1", "set,1,8", "put,1,1", "set,1"} {
		if err := ApplyDSCP2Prio(&m, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	n, err := New(&Config{IP: netip.MustParseAddr("10.0.0.1"), Rate: 100e9, PFC: pfc, DSCP2Prio: &m}, &loop{}, frame.NewPool())
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := n.WriteMlnxQos(&sb); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{
		"Priority trust state: dscp\n",
		"\tprio:3 dscp:46,31,30,29,28,27,26,25,24,\n",
		"\tprio:5 dscp:47,45,44,43,42,41,40,\n",
		"\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   0   0\n",
		"tc: 3 ratelimit: unlimited, tsa: strict\n\t priority:  3\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}
