package lab

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// full uses every key of the format at least once.
const full = `name: full_lab-1
fabric: roce
topology:
  defaults: &d {rate: 25Gbps, delay: 500ns, mtu: 9000, loss: "0.5%", corrupt: 0.001}
  nodes:
    leaf:
      kind: switch
      ports: [swp1, swp2, swp3]
      cut_through: false
      header_bytes: 128
      trust: pcp
      ecmp_seed: 42
      ecn_mark: enqueue
      pfc_quanta: 1000
      pfc_refresh: 5us
      mac_learning: false
      mac: "02:00:00:00:10:01"
      lid: 7
      routes: [{dst: 10.9.0.0/16, via: [swp1]}]
      qos:
        DSCP_TO_TC_MAP: {26: 3, "48": 6}
        DOT1P_TO_TC_MAP: {"3": 3}
        TC_TO_PRIORITY_GROUP_MAP: {3: 3, 4: 4}
        TC_TO_QUEUE_MAP: {3: 3}
        MAP_PFC_PRIORITY_TO_QUEUE: {3: 3}
        BUFFER_POOL:
          ingress_lossless_pool: {size: 12MB, type: ingress, mode: dynamic, xoff: 2MiB}
          egress_static_pool: {size: 8MiB, type: egress, mode: static}
        BUFFER_PROFILE:
          pg_lossless_25000_5m_profile: {pool: ingress_lossless_pool, size: 0, dynamic_th: 0, xon: 18432, xoff: 64KiB, xon_offset: 2496}
          egress_static: {pool: egress_static_pool, size: 1518, static_th: 512KiB}
        BUFFER_PG: {"swp1,swp2|3": {profile: "[BUFFER_PROFILE|pg_lossless_25000_5m_profile]"}}
        BUFFER_QUEUE: {"0-7": egress_static}
        WRED_PROFILE:
          AZURE_LOSSLESS:
            ecn: ecn_all
            wred_green_enable: "true"
            green_min_threshold: 1MiB
            green_max_threshold: 2MiB
            green_drop_probability: 5
            wred_yellow_enable: false
            red_min_threshold: 100KiB
            red_max_threshold: 200KiB
            red_drop_probability: 100
        SCHEDULER: {scheduler.0: {type: WRR, weight: 14}}
        QUEUE: {"swp3|0-2": {scheduler: scheduler.0, wred_profile: AZURE_LOSSLESS}}
        PFC_WD: {GLOBAL: {POLL_INTERVAL: 100ms}, ports: {detection_time: "150", restoration_time: 300ms, action: forward}}
    h1: {kind: nic, trust: pcp, vid: 100, ignore_pfc: true}
    h2:
      kind: nic
      ports: [eth1]
      pfc_storm: {priority: 4, start: 10us, stop: 50us, interval: 2us}
  links:
    - endpoints: [h1:eth0, leaf:swp1]
    - endpoints: [h2:eth1, leaf:swp2]
      <<: *d
      rate: 10G
      schedule: [{at: 20us, state: down}, {at: 30us, state: up}]
qos:
  PORT_QOS_MAP: {pfc_enable: [3, 4]}
traffic:
  - name: cdf
    src: h1
    dst: h2
    kind: ud_send
    rate: 10G
    size: {dist: cdf, points: [[1KiB, 0.25], ["64KiB", 0.9], [1MiB, 1.0]]}
    count: 100
    start: 1us
    stop: 90us
    priority: 4
    dscp: 34
    ecn: false
    pmtu: 2048
    sport: 49152
  - {name: fixed, src: h2, dst: h1, size: {dist: fixed, size: 9KB}, dscp: 46}
sim:
  duration: 100us
  sample_interval: 10us
  seed: 77
  deadlock_window: 10us
  max_events: 1000000
`

func TestParseFull(t *testing.T) {
	s, err := Parse("full.yml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	leaf := s.Node("leaf")
	if leaf.CutThrough || leaf.HeaderBytes != 128 || leaf.Trust != TrustPCP || leaf.ECMPSeed != 42 || leaf.ECNMarkAt != MarkEnqueue ||
		leaf.PFCQuanta != 1000 || leaf.PFCRefresh != 5*clock.Microsecond || leaf.MACLearning || leaf.LID != 7 ||
		leaf.MAC != [6]byte{2, 0, 0, 0, 0x10, 1} || len(leaf.Ports) != 3 || leaf.Ports[2].Link != nil {
		t.Errorf("leaf %+v", leaf)
	}
	q := leaf.QoS
	if q.DSCPToTC[26] != 3 || q.DSCPToTC[48] != 6 || q.Dot1pToTC[3] != 3 || q.TCToPG[4] != 4 || q.TCToQueue[3] != 3 || q.PFCPrioToQueue[3] != 3 {
		t.Errorf("maps %+v", q)
	}
	if q.PortQoSMap.PFCEnable != 0x18 {
		t.Errorf("pfc_enable inherited: %+v", q.PortQoSMap)
	}
	if p := q.BufferPools["ingress_lossless_pool"]; p.Size != 12e6 || p.Xoff != 2<<20 || q.BufferPools["egress_static_pool"].Mode != PoolStatic {
		t.Errorf("pools %+v", q.BufferPools)
	}
	if p := q.BufferProfiles["egress_static"]; p.HasDynamicTh || p.StaticTh != 512<<10 || p.Size != 1518 {
		t.Errorf("static profile %+v", p)
	}
	if b := q.BufferPG[0]; b.Profile != "pg_lossless_25000_5m_profile" || len(b.Ports) != 2 || b.IDs != 8 {
		t.Errorf("BUFFER_PG %+v", b)
	}
	w := q.WREDProfiles["AZURE_LOSSLESS"]
	if w.ECN != ECNAll || !w.Green.Enable || w.Green.MaxThreshold != 2<<20 || w.Yellow.Enable || w.Red.DropProbability != 100 {
		t.Errorf("wred %+v", w)
	}
	if sc := q.Schedulers["scheduler.0"]; sc.Type != SchedWRR || sc.Weight != 14 {
		t.Errorf("scheduler %+v", sc)
	}
	if qb := q.Queues[0]; qb.Ports[0] != 2 || qb.Queues != 7 {
		t.Errorf("QUEUE %+v", qb)
	}
	if wd := q.PFCWD; wd.PollInterval != 100*clock.Millisecond || wd.DetectionTime != 150*clock.Millisecond ||
		wd.RestorationTime != 300*clock.Millisecond || wd.Action != PFCWDForward {
		t.Errorf("PFC_WD %+v", wd)
	}
	h1, h2 := s.Node("h1"), s.Node("h2")
	if !h1.Tagged || h1.VID != 100 || !h1.IgnorePFC || h1.IPv4 != [4]byte{10, 0, 0, 1} {
		t.Errorf("h1 %+v", h1)
	}
	if st := h2.Storm; st.Priority != 4 || st.Start != 10*clock.Microsecond || st.Stop != 50*clock.Microsecond || st.Interval != 2*clock.Microsecond {
		t.Errorf("storm %+v", st)
	}
	l0, l1 := s.Links[0], s.Links[1]
	if l0.Rate != 25e9 || l0.Delay != 500*clock.Nanosecond || l0.MTU != 9000 || l0.Loss != 0.005 || l0.Corrupt != 0.001 {
		t.Errorf("link 0 %+v", l0.LinkParams)
	}
	if l1.Rate != 10e9 || len(l1.Schedule) != 2 || l1.Schedule[0] != (LinkEvent{20 * clock.Microsecond, false}) || !l1.Schedule[1].Up {
		t.Errorf("link 1 %+v %+v", l1.LinkParams, l1.Schedule)
	}
	f := s.Traffic[0]
	if f.Kind != FlowUDSend || f.Rate != 10e9 || f.Count != 100 || f.Start != clock.Microsecond || f.Stop != 90*clock.Microsecond ||
		f.Priority != 4 || f.DSCP != 34 || f.ECN || f.PMTU != 2048 || f.SrcPort != 49152 || len(f.Size.Points) != 3 || f.Size.Points[1].Size != 64<<10 {
		t.Errorf("flow %+v", f)
	}
	// dscp without priority: priority = dscp >> 3.
	if g := s.Traffic[1]; g.Priority != 5 || g.DSCP != 46 || g.Size.Size != 9000 || g.Rate != 10e9 || g.PMTU != 4096 {
		t.Errorf("flow %+v", g)
	}
	if s.Sim.Seed != 77 || s.Sim.DeadlockWindow != 10*clock.Microsecond || s.Sim.MaxEvents != 1e6 || s.Sim.SampleInterval != 10*clock.Microsecond {
		t.Errorf("sim %+v", s.Sim)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %v", s.Warnings)
	}
}

// TestParseFullErrors edits the full file into one mistake at a time.
func TestParseFullErrors(t *testing.T) {
	for _, c := range []struct{ old, new, want string }{
		{`schedule: [{at: 20us, state: down}, {at: 30us, state: up}]`, `schedule: [{at: 20us, state: down}, {at: 10us, state: up}]`,
			`full.yml:58: topology.links[1].schedule[1].at: 10us is not after the previous event (20us)`},
		{`state: down}`, `state: off}`, `full.yml:58: topology.links[1].schedule[0].state: "off" is not one of up, down`},
		{`{at: 20us, state: down}, `, `{state: down}, `, `full.yml:58: topology.links[1].schedule[0]: missing key "at" (when the state changes)`},
		{`DSCP_TO_TC_MAP: {26: 3,`, `DSCP_TO_TC_MAP: {64: 3,`, `full.yml:21: topology.nodes.leaf.qos.DSCP_TO_TC_MAP.64: 64 is out of range [0, 63]`},
		{`TC_TO_QUEUE_MAP: {3: 3}`, `TC_TO_QUEUE_MAP: {3: 8}`, `full.yml:24: topology.nodes.leaf.qos.TC_TO_QUEUE_MAP.3: 8 is out of range [0, 7]`},
		{`wred_green_enable: "true"`, `wred_green_enable: "yes"`, `full.yml:37: topology.nodes.leaf.qos.WRED_PROFILE.AZURE_LOSSLESS.wred_green_enable: expected true or false, got the string "yes"`},
		{`loss: "0.5%"`, `loss: "150%"`, `full.yml:4: topology.defaults.loss: "150%" is not a percentage in [0%, 100%]`},
		{`ports: [swp1, swp2, swp3]`, `ports: [swp1, swp1]`, `full.yml:8: topology.nodes.leaf.ports[1]: port "swp1" is listed twice`},
		{`ports: [eth1]`, `ports: 2`, `full.yml:51: topology.nodes.h2.ports: a nic lists its interfaces by name, e.g. [eth0]`},
		{`vid: 100`, `vid: 4095`, `full.yml:48: topology.nodes.h1.vid: 4095 is out of range [0, 4094]`},
		{`via: [swp1]`, `via: [swp3]`, `full.yml:19: topology.nodes.leaf.routes[0].via[0]: port leaf:swp3 is not connected`},
		{`via: [swp1]`, `via: [swp9]`, `full.yml:19: topology.nodes.leaf.routes[0].via[0]: unknown port "leaf:swp9" (leaf has swp1, swp2, swp3)`},
		{`dst: 10.9.0.0/16`, `dst: 10.9.0.0/33`, `full.yml:19: topology.nodes.leaf.routes[0].dst: "10.9.0.0/33" is neither a node nor an IPv4 prefix such as 10.0.1.0/24`},
		{`[1MiB, 1.0]`, `[1MiB, 0.95]`, `full.yml:67: traffic[0].size.points[2]: the last CDF point must have probability 1`},
		{`["64KiB", 0.9]`, `["64KiB", 0.1]`, `full.yml:67: traffic[0].size.points[1]: CDF points must increase in size and not decrease in probability`},
		{`pmtu: 2048`, `pmtu: 3000`, `full.yml:74: traffic[0].pmtu: path MTU 3000: must be 256, 512, 1024, 2048 or 4096`},
		{`stop: 90us`, `stop: 1us`, `full.yml:70: traffic[0].stop: stop 1us is not after start 1us`},
		{`sample_interval: 10us`, `sample_interval: 1ms`, `full.yml:79: sim.sample_interval: sample_interval 1ms is longer than the duration 100us`},
		{`sample_interval: 10us`, `sample_interval: 10ps`, `full.yml:79: sim.sample_interval: 10ps gives 10000000 samples per series; at most 1000000`},
		{`egress_static_pool: {size: 8MiB, type: egress, mode: static}`, `egress_static_pool: {size: 8MiB, type: egress, mode: static, xoff: 1MiB}`,
			`full.yml:28: topology.nodes.leaf.qos.BUFFER_POOL.egress_static_pool.xoff: xoff (shared headroom) is for ingress pools only`},
		{`xoff: 64KiB, xon_offset`, `xoff: 3MiB, xon_offset`, `full.yml:30: topology.nodes.leaf.qos.BUFFER_PROFILE.pg_lossless_25000_5m_profile.xoff: xoff 3145728 is larger than the shared headroom pool ingress_lossless_pool (xoff 2097152)`},
		{`static_th: 512KiB}`, `static_th: 512KiB, dynamic_th: 1}`, `full.yml:31: topology.nodes.leaf.qos.BUFFER_PROFILE.egress_static.static_th: a profile has dynamic_th or static_th, not both`},
		{`kind: ud_send`, `kind: rdma_read`, `full.yml:65: traffic[0].kind: "rdma_read" is not one of rdma_write, ud_send`},
		{`ecn: false`, `ecn: maybe`, `full.yml:73: traffic[0].ecn: expected true or false, got the string "maybe"`},
		{`fabric: roce`, `fabric: ib`, `full.yml:4: topology.defaults.mtu: 9000 is out of range [256, 4096]`},
		{`{name: fixed, src: h2, dst: h1,`, `{name: cdf, src: h2, dst: h1,`, `full.yml:76: traffic[1]: flow name "cdf" is also used by traffic[0]`},
		{`dst: h1, size: {dist: fixed, size: 9KB}`, `dst: h1, size: {dist: fixed}`, `full.yml:76: traffic[1].size: missing key "size" for dist fixed`},
	} {
		if !strings.Contains(full, c.old) {
			t.Fatalf("full lacks %q", c.old)
		}
		_, err := Parse("full.yml", []byte(strings.Replace(full, c.old, c.new, 1)))
		if err == nil {
			t.Errorf("%s: no error", c.new)
			continue
		}
		if got := strings.Split(err.Error(), "\n")[0]; got != c.want {
			t.Errorf("%s:\n got: %s\nwant: %s", c.new, got, c.want)
		}
	}
}
