package nic

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// mlnx_qos vocabulary: the argument shapes users type (--trust dscp,
// --pfc 0,0,0,1,0,0,0,0, --dscp2prio set,26,3) and the show layout, so a
// NIC's QoS reads like a ConnectX port's.

// ParseTrust parses "pcp" or "dscp" (mlnx_qos --trust).
func ParseTrust(s string) (Trust, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "dscp":
		return TrustDSCP, nil
	case "pcp":
		return TrustPCP, nil
	}
	return 0, fmt.Errorf("trust %q: want pcp or dscp", s)
}

// ParsePFC parses eight comma-separated 0/1 flags, one per priority
// (mlnx_qos --pfc 0,0,0,1,0,0,0,0).
func ParsePFC(s string) (*[8]bool, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 8 {
		return nil, fmt.Errorf("pfc %q: want 8 comma-separated 0/1 values, got %d", s, len(parts))
	}
	var v [8]bool
	for i, p := range parts {
		switch strings.TrimSpace(p) {
		case "0":
		case "1":
			v[i] = true
		default:
			return nil, fmt.Errorf("pfc %q: priority %d is %q, want 0 or 1", s, i, p)
		}
	}
	return &v, nil
}

// ApplyDSCP2Prio applies one --dscp2prio argument to m: "set,<dscp>,<prio>"
// or "del,<dscp>,<prio>" (back to the default DSCP>>3) or "flush" (all
// defaults).
func ApplyDSCP2Prio(m *[64]uint8, arg string) error {
	f := strings.Split(arg, ",")
	switch {
	case len(f) == 1 && f[0] == "flush":
		*m = defaultDSCP2Prio()
		return nil
	case len(f) != 3 || f[0] != "set" && f[0] != "del":
		return fmt.Errorf("dscp2prio %q: want set,<dscp>,<prio>, del,<dscp>,<prio> or flush", arg)
	}
	d, err1 := strconv.Atoi(f[1])
	p, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || d < 0 || d > 63 || p < 0 || p > 7 {
		return fmt.Errorf("dscp2prio %q: dscp must be 0..63 and prio 0..7", arg)
	}
	if f[0] == "set" {
		m[d] = uint8(p)
	} else {
		m[d] = uint8(d >> 3)
	}
	return nil
}

// WriteMlnxQos prints the NIC's QoS the way `mlnx_qos -i <if>` shows a
// port: DCBX mode, trust, the dscp2prio mapping (DSCPs listed per
// priority, highest first), the PFC table and one line per traffic class.
// The NIC has one strict-priority queue per priority, so TC n holds
// priority n; buffers are not modelled and not printed.
func (n *NIC) WriteMlnxQos(w io.Writer) error {
	var b strings.Builder
	b.WriteString("DCBX mode: OS controlled\n")
	fmt.Fprintf(&b, "Priority trust state: %s\n", n.cfg.Trust)
	if n.cfg.Trust == TrustDSCP {
		b.WriteString("dscp2prio mapping:\n")
		for p := range 8 {
			fmt.Fprintf(&b, "\tprio:%d dscp:", p)
			for d := 63; d >= 0; d-- {
				if n.dscp2prio[d] == uint8(p) {
					fmt.Fprintf(&b, "%02d,", d)
				}
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled  ")
	for p := range 8 {
		v := 0
		if n.pfcHonour[p] {
			v = 1
		}
		fmt.Fprintf(&b, " %3d", v)
	}
	b.WriteString("\n")
	for p := range 8 {
		fmt.Fprintf(&b, "tc: %d ratelimit: unlimited, tsa: strict\n\t priority:  %d\n", p, p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
