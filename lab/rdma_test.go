package lab

import (
	"strings"
	"testing"
)

// TestRDMAFlows: op flows make their hosts real NICs, take qps, depth and
// cc, stop at the end of the run without a count, and a dcqcn section
// (global or per node) starts from a profile and overrides knobs by their
// NVIDIA names.
func TestRDMAFlows(t *testing.T) {
	y := replace(`  - {name: f1, src: h1, dst: h2, size: 64KiB, priority: 3}`,
		`  - {name: f1, src: h1, dst: h2, size: 64KiB, priority: 3, op: read, qps: 4, depth: 8, cc: none}`)
	y = strings.Replace(y, "    h2: {kind: nic}", "    h2: {kind: nic, dcqcn: {profile: paper, rp_ai_rate: 100, rp_clamp_tgt_rate: false}}", 1)
	y = strings.Replace(y, "sim: {duration: 1ms}", "dcqcn: {np_min_time_between_cnps: 4}\nsim: {duration: 1ms}", 1)
	s, err := Parse("t.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	f := s.Traffic[0]
	if f.Op != OpRead || f.QPs != 4 || f.Depth != 8 || f.CC != CCNone || f.Stop != 0 || f.Count != 0 {
		t.Errorf("flow %+v", f)
	}
	h1, h2 := s.Node("h1"), s.Node("h2")
	if !h1.RDMA || !h2.RDMA {
		t.Errorf("RDMA h1 %v h2 %v", h1.RDMA, h2.RDMA)
	}
	// READ: the responder (h2) sends the data, so cc lands on it.
	if h2.CC != CCNone || h1.CC != "" {
		t.Errorf("cc h1 %q h2 %q", h1.CC, h2.CC)
	}
	if d := s.DCQCNOf(h2); d == nil || d.RPAIRate != 100 || d.RPTimeReset != 55 || d.RPClampTgtRate || d.NPMinTimeBetweenCNPs != 50 {
		t.Errorf("h2 dcqcn %+v", d)
	}
	if d := s.DCQCNOf(h1); d == nil || d.NPMinTimeBetweenCNPs != 4 || d.RPTimeReset != 300 {
		t.Errorf("h1 dcqcn (global, nvidia profile) %+v", d)
	}
}

func TestRDMAErrors(t *testing.T) {
	flow := `  - {name: f1, src: h1, dst: h2, size: 64KiB, priority: 3}`
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"bad op", flow, `  - {name: f1, src: h1, dst: h2, op: atomic}`,
			`t.yaml:20: traffic[0].op: "atomic" is not one of write, read, send`},
		{"rate with op", flow, `  - {name: f1, src: h1, dst: h2, op: write, rate: 10G}`,
			`t.yaml:20: traffic[0].rate: rate is for raw flows (kind); an op flow posts verbs as fast as the NIC and its congestion control allow`},
		{"qps without op", flow, `  - {name: f1, src: h1, dst: h2, qps: 2}`,
			`t.yaml:20: traffic[0].qps: qps is for RDMA flows: add op: write, read or send`},
		{"bad cc", flow, `  - {name: f1, src: h1, dst: h2, op: write, cc: hpcc}`,
			`t.yaml:20: traffic[0].cc: "hpcc" is not one of dcqcn, none`},
		{"size dist", flow, `  - {name: f1, src: h1, dst: h2, op: write, size: {dist: uniform, min: 1KiB, max: 2KiB}}`,
			`t.yaml:20: traffic[0].size: an RDMA flow posts messages of one size (perftest -s); got a uniform distribution`},
		{"mixed", flow, flow + "\n" + `  - {name: f2, src: h1, dst: h2, op: write}`,
			`t.yaml:20: traffic[0]: h1 is a real NIC (RDMA flow f2, line 21) and cannot also carry raw flows (kind); give the raw flow its own host or an op`},
		{"cc conflict", flow, `  - {name: f1, src: h1, dst: h2, op: write, cc: none}` + "\n" + `  - {name: f2, src: h1, dst: h2, op: send, cc: dcqcn}`,
			`t.yaml:21: traffic[1].cc: cc dcqcn, but flow f1 (line 20) sets cc none on h1: congestion control is per NIC`},
		{"unknown knob", "    h1: {kind: nic}", "    h1: {kind: nic, dcqcn: {rp_ai_rte: 5}}",
			`t.yaml:5: topology.nodes.h1.dcqcn.rp_ai_rte: unknown key "rp_ai_rte" (did you mean "rp_ai_rate"?)`},
		{"knob range", "    h1: {kind: nic}", "    h1: {kind: nic, dcqcn: {profile: paper, rp_gd: 30}}",
			`t.yaml:5: topology.nodes.h1.dcqcn.rp_gd: rp_gd: must be in 10..20, got 30`},
		// Each knob's error at its own line, not at the section's: the
		// two increase steps shared one message, "rp_ai_rate/rp_hai_rate",
		// which named no key.
		{"negative rp_ai_rate", "sim: {duration: 1ms}", "dcqcn:\n  profile: paper\n  rp_ai_rate: -5\nsim: {duration: 1ms}",
			`t.yaml:23: dcqcn.rp_ai_rate: rp_ai_rate: must be >= 0 Mb/s, got -5`},
		{"negative rp_hai_rate", "sim: {duration: 1ms}", "dcqcn:\n  profile: paper\n  rp_ai_rate: 5\n  rp_hai_rate: -50\nsim: {duration: 1ms}",
			`t.yaml:24: dcqcn.rp_hai_rate: rp_hai_rate: must be >= 0 Mb/s, got -50`},
		{"bad profile", "    h1: {kind: nic}", "    h1: {kind: nic, dcqcn: {profile: fast}}",
			`t.yaml:5: topology.nodes.h1.dcqcn.profile: "fast" is not one of nvidia, paper`},
		{"dcqcn on a switch", "    sw1: {kind: switch, ports: 4}", "    sw1: {kind: switch, ports: 4, dcqcn: {profile: paper}}",
			`t.yaml:6: topology.nodes.sw1.dcqcn: "dcqcn" is a nic setting; sw1 is a switch`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(replace(c.old, c.new)))
			if err == nil {
				t.Fatal("no error")
			}
			first := strings.SplitN(err.Error(), "\n", 2)[0]
			if first != c.want {
				t.Errorf("got  %s\nwant %s", first, c.want)
			}
		})
	}
}
