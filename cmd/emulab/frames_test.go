package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/emufabric/emufabric/wire/capture"
	"github.com/emufabric/emufabric/zoo"
)

// run executes the root command with args and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&out)
	rootCmd.SetArgs(args)
	defer func() {
		rootCmd.SetArgs(nil)
		rootCmd.SetOut(nil)
		rootCmd.SetErr(nil)
	}()
	err := rootCmd.Execute()
	return out.String(), err
}

// runSubcommand runs "emulab NAME ARGS" with the flags of NAME (its own,
// its persistent ones and its subcommands') back at their defaults: cobra
// keeps flag values between Execute calls of the same command tree. It
// returns standard output and standard error apart.
func runSubcommand(t *testing.T, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	c, _, ferr := rootCmd.Find([]string{name})
	if ferr != nil {
		t.Fatal(ferr)
	}
	reset := func(f *pflag.Flag) {
		f.Value.Set(f.DefValue)
		f.Changed = false
	}
	c.Flags().VisitAll(reset)
	c.PersistentFlags().VisitAll(reset)
	for _, sc := range c.Commands() {
		sc.Flags().VisitAll(reset)
	}
	var out, errb bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&errb)
	rootCmd.SetArgs(append([]string{name}, args...))
	defer func() {
		rootCmd.SetArgs(nil)
		rootCmd.SetOut(nil)
		rootCmd.SetErr(nil)
	}()
	err = rootCmd.Execute()
	return out.String(), errb.String(), err
}

// readAll returns the records of a capture file.
func readAll(t *testing.T, path string) (capture.Format, []capture.Record) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := capture.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	var recs []capture.Record
	for {
		var rec capture.Record
		if err := r.Next(&rec); err != nil {
			break
		}
		rec.Data = append([]byte(nil), rec.Data...)
		recs = append(recs, rec)
	}
	return r.Format(), recs
}

func TestFramesFormats(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args   []string
		file   string
		format capture.Format
	}{
		{[]string{"-o", "zoo.pcapng"}, "zoo.pcapng", capture.FormatPcapNG},
		{[]string{"-o", "zoo.pcap"}, "zoo.pcap", capture.FormatPcap},
		{[]string{"-o", "forced.pcap", "--format", "pcapng"}, "forced.pcap", capture.FormatPcapNG},
		{[]string{"-o", "noext", "--format", "pcap"}, "noext", capture.FormatPcap},
		{[]string{"-o", "noext2"}, "noext2", capture.FormatPcapNG},
	}
	eth := zoo.Ethernet()
	for _, c := range cases {
		args := append([]string{"frames", "--format", "", "--ib", ""}, c.args...)
		for i := range args {
			if i > 0 && args[i-1] == "-o" {
				args[i] = filepath.Join(dir, args[i])
			}
		}
		if out, err := run(t, args...); err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, out)
		}
		format, recs := readAll(t, filepath.Join(dir, c.file))
		if format != c.format {
			t.Errorf("%v: wrote %s, want %s", c.args, format, c.format)
		}
		if len(recs) != len(eth) {
			t.Fatalf("%v: %d frames, want %d", c.args, len(recs), len(eth))
		}
		for i, r := range recs {
			if !bytes.Equal(r.Data, eth[i].Data) || r.LinkType != capture.LinkTypeEthernet {
				t.Errorf("%v: frame %d is not %s", c.args, i+1, eth[i].Name)
			}
			if format == capture.FormatPcapNG && r.Comment != eth[i].Name {
				t.Errorf("%v: frame %d comment %q, want %q", c.args, i+1, r.Comment, eth[i].Name)
			}
		}
	}
}

func TestFramesIB(t *testing.T) {
	dir := t.TempDir()
	ib := filepath.Join(dir, "ib.pcap")
	if out, err := run(t, "frames", "--format", "", "-o", "", "--ib", ib); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	format, recs := readAll(t, ib)
	want := zoo.IB()
	if format != capture.FormatPcap || len(recs) != len(want) {
		t.Fatalf("%s with %d records, want pcap with %d", format, len(recs), len(want))
	}
	for i, r := range recs {
		typ := uint8(capture.ERFTypeInfiniBand)
		if want[i].Link == zoo.LinkIBFlowControl {
			typ = capture.ERFTypeInfiniBandLink
		}
		if r.LinkType != capture.LinkTypeERF || r.ERF.Type != typ || !bytes.Equal(r.Data, want[i].Data) {
			t.Errorf("record %d: link type %s, ERF type %d; want ERF type %d holding %s", i+1, r.LinkType, r.ERF.Type, typ, want[i].Name)
		}
	}
}

func TestFramesUsage(t *testing.T) {
	for _, args := range [][]string{
		{"frames", "-o", "", "--ib", "", "--format", ""},
		{"frames", "-o", filepath.Join(t.TempDir(), "x"), "--ib", "", "--format", "pcapx"},
		{"frames", "-o", filepath.Join(t.TempDir(), "no", "such", "dir.pcap"), "--ib", "", "--format", ""},
	} {
		if _, err := run(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestDecodeCommand(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "zoo.pcapng")
	if out, err := run(t, "frames", "--format", "", "--ib", "", "-o", p); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := run(t, "decode", p)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	// The golden file of the dissect package decodes a pcapng of the whole
	// zoo whose first interface holds the Ethernet frames in the same order:
	// its first lines are what `emulab decode` must print for this file.
	golden, err := os.ReadFile(filepath.Join("..", "..", "dissect", "testdata", "zoo.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.SplitAfter(string(golden), "\n")[:len(zoo.Ethernet())]
	if got := strings.SplitAfter(out, "\n"); strings.Join(got, "") != strings.Join(want, "") {
		t.Errorf("decode output (%d lines) differs from the golden file's first %d lines", len(got)-1, len(want))
	}
	if _, err := run(t, "decode", filepath.Join(dir, "missing.pcap")); err == nil {
		t.Error("decoding a missing file: no error")
	}
	if _, err := run(t, "decode"); err == nil {
		t.Error("decode without a file: no error")
	}
}

// badCapture writes a pcap whose second frame has PadCnt set on a SEND
// FIRST packet.
func badCapture(t *testing.T, dir string) string {
	t.Helper()
	var good, bad []byte
	for _, e := range zoo.Ethernet() {
		switch e.Name {
		case "RoCEv2/IPv4 RC_SEND_ONLY":
			good = e.Data
		case "RoCEv2/IPv4 RC_SEND_FIRST":
			bad = append([]byte(nil), e.Data...)
		}
	}
	bad[14+20+8+1] |= 1 << 4 // BTH byte 1: PadCnt 1
	var b bytes.Buffer
	w, err := capture.NewPcapWriter(&b, capture.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range [][]byte{good, bad, good} {
		if err := w.WritePacket(zoo.Timestamp(i), f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "bad.pcap")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecodeBadFrame(t *testing.T) {
	p := badCapture(t, t.TempDir())
	out, err := run(t, "decode", p)
	const want = "frame 2: BTH.PadCnt: inconsistent"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v, want %q...", err, want)
	}
	if exitCode(err) == 0 {
		t.Error("exit code 0 for an undecodable frame")
	}
	if n := strings.Count(out, "\n"); n != 3 {
		t.Errorf("%d lines printed, want 3 (frames 1 and 3 still decode)", n)
	}
}

// TestBinaryExitStatus builds the real binary and checks what a shell sees:
// status 1 and the frame, header and field on stderr.
func TestBinaryExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "emulab")
	if out, err := exec.Command("go", "build", "-buildvcs=false", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "decode", badCapture(t, dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1", err)
	}
	if !strings.Contains(stderr.String(), "frame 2: BTH.PadCnt: inconsistent") {
		t.Errorf("stderr %q does not name frame 2, BTH.PadCnt", stderr.String())
	}
	if out, err := exec.Command(bin, "frames", "-o", filepath.Join(dir, "z.pcapng")).CombinedOutput(); err != nil {
		t.Errorf("frames: %v\n%s", err, out)
	}
}
