// Package interop holds tests only: they judge the project's frames with
// tools nobody on the project wrote. Wireshark's tshark must decode the frame
// zoo without a Malformed frame or an expert warning and report the fields we
// encoded; scapy must compute the same ICRCs; frames scapy builds must decode
// in ours to the fields scapy was given.
//
// Each test skips when its tool is missing, and fails instead when the
// environment variable CI is "true", so CI cannot pass by not running them.
// The tools: tshark on PATH, and /usr/bin/python3 with scapy (Debian's
// python3-scapy is importable by that interpreter, not necessarily by another
// python3 on PATH).
package interop_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// systemPython is the interpreter Debian's python3-scapy installs into.
const systemPython = "/usr/bin/python3"

// missing fails the test under CI=true and skips it otherwise.
func missing(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing and CI=true: install it (Debian: apt-get install tshark python3-scapy)", what)
	}
	t.Skipf("%s is missing (install tshark and python3-scapy; with CI=true this test fails)", what)
}

func needTshark(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		missing(t, "tshark")
	}
	return p
}

func needScapy(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(systemPython); err != nil {
		missing(t, systemPython)
	}
	if out, err := exec.Command(systemPython, "-c", "import scapy.contrib.roce, scapy.contrib.mac_control").CombinedOutput(); err != nil {
		missing(t, fmt.Sprintf("scapy for %s (%v: %s)", systemPython, err, bytes.TrimSpace(out)))
	}
}

// runPython runs a script from testdata with the system interpreter.
func runPython(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(systemPython, append([]string{"testdata/" + script}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") // no __pycache__ in testdata
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	return out
}

// Wireshark dissects opaque RDMA payloads with heuristics (RPC-over-RDMA,
// SMB Direct, NVMe-oF, iSER, ...) that misfire on the zoo's counting
// patterns and report Malformed packets that are not ours. They are all
// turned off; the transport headers are what is under test.
var (
	payloadProtocols  = []string{"rpcordma", "smb_direct", "nvme-rdma", "iser", "lnet", "smc", "infiniband_sdp", "fcoib", "infiniband.eoib"}
	payloadHeuristics = []string{"eth_over_ib", "mellanox_eoib", "rpcrdma_infiniband"}
)

// Expert info severities as tshark's JSON output writes them.
const (
	severityWarning = 6291456
	severityError   = 8388608
)

// udp6ZeroChecksum is tshark 4.0's expert error for a zero UDP checksum over
// IPv6. RoCEv2 sends the UDP checksum as 0 over IPv6 too (Linux rxe, RoCE
// NICs; the ICRC protects the datagram), so this one message is expected on
// RoCEv2/IPv6 frames and on nothing else.
const udp6ZeroChecksum = "Illegal checksum value (0)"

type expert struct {
	severity int
	message  string
}

// packet is one frame of tshark's JSON output, flattened: every field name
// with all its values in order (tshark repeats keys for repeated fields,
// which a map-based JSON decode would lose), the protocols present and the
// expert infos.
type packet struct {
	fields  map[string][]string
	protos  map[string]bool
	experts []expert
}

func (p *packet) first(name string) (string, bool) {
	v := p.fields[name]
	if len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// tshark runs tshark over path with a throw-away configuration (the user's
// preferences must not change the verdict) and the payload heuristics off.
func tshark(t *testing.T, path string, extra ...string) []packet {
	t.Helper()
	bin := needTshark(t)
	cfg := t.TempDir()
	args := []string{"-n", "-r", path, "-T", "json",
		"-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
		"-o", "infiniband.rroce.port:4791"}
	for _, p := range payloadProtocols {
		args = append(args, "--disable-protocol", p)
	}
	for _, h := range payloadHeuristics {
		args = append(args, "--disable-heuristic", h)
	}
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "WIRESHARK_CONFIG_DIR="+cfg, "XDG_CONFIG_HOME="+cfg, "HOME="+cfg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark %s: %v\n%s", path, err, stderr.String())
	}
	pkts, err := parseTsharkJSON(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("tshark JSON: %v", err)
	}
	return pkts
}

// parseTsharkJSON streams through tshark's JSON array with json.Decoder
// tokens so that repeated keys are all kept.
func parseTsharkJSON(r io.Reader) ([]packet, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("want a JSON array, got %v (%v)", tok, err)
	}
	var pkts []packet
	for dec.More() {
		p := packet{fields: map[string][]string{}, protos: map[string]bool{}}
		if err := walk(dec, "", &p); err != nil {
			return nil, err
		}
		pkts = append(pkts, p)
	}
	_, err := dec.Token()
	return pkts, err
}

// walk consumes one JSON value named key. An object value is a protocol or
// a subtree (names ending in "_tree" are subtrees); an "_ws.expert" object
// is also collected as an expert info.
func walk(dec *json.Decoder, key string, p *packet) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			if key != "" && !strings.HasSuffix(key, "_tree") {
				p.protos[key] = true
			}
			target := p
			var sub packet
			if key == "_ws.expert" {
				sub = packet{fields: map[string][]string{}, protos: p.protos}
				target = &sub
			}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				if err := walk(dec, k.(string), target); err != nil {
					return err
				}
			}
			if key == "_ws.expert" {
				sev, _ := sub.first("_ws.expert.severity")
				msg, _ := sub.first("_ws.expert.message")
				n, _ := strconv.Atoi(sev)
				p.experts = append(p.experts, sub.experts...)
				p.experts = append(p.experts, expert{n, msg})
				for k, vs := range sub.fields {
					p.fields[k] = append(p.fields[k], vs...)
				}
			}
		case '[':
			for dec.More() {
				if err := walk(dec, key, p); err != nil {
					return err
				}
			}
		}
		_, err := dec.Token() // the closing delimiter
		return err
	case string:
		p.fields[key] = append(p.fields[key], v)
	case json.Number:
		p.fields[key] = append(p.fields[key], v.String())
	case bool:
		p.fields[key] = append(p.fields[key], strconv.FormatBool(v))
	}
	return nil
}

// number parses a tshark field value: decimal, 0x-hex, or a boolean.
func number(s string) (uint64, bool) {
	switch s {
	case "True", "true":
		return 1, true
	case "False", "false":
		return 0, true
	}
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		v, err := strconv.ParseUint(h, 16, 64)
		return v, err == nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}
