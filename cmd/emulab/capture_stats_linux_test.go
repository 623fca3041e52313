package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/wire/capture"
)

// fakeCaptureDaemon serves one capture on a unix socket as emuswitch and
// emunic do: the OK line, a pcapng stream of one interface per port with
// one record per entry of comments (comments[i] goes to port i%ports),
// then, once the client half-closes, a statistics block per port with
// drops[port] lost records, and the end of the stream. wrote is closed
// when the records are out.
func fakeCaptureDaemon(t *testing.T, path string, ports int, comments []string, drops []int64) (wrote chan struct{}) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	wrote = make(chan struct{})
	go func() {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := br.ReadBytes('\n'); err != nil {
			return
		}
		io.WriteString(c, `{"ok":true}`+"\n")
		ng, _ := capture.NewNgWriter(c, "fake")
		for range ports {
			ng.AddInterface(capture.Interface{LinkType: capture.LinkTypeEthernet})
		}
		frame := bytes.Repeat([]byte{0x5a}, 60)
		recv := make([]int64, ports)
		ts := time.Now()
		for i, cm := range comments {
			ng.WritePacket(i%ports, ts.Add(time.Duration(i)), frame, cm)
			recv[i%ports]++
		}
		ng.Flush()
		close(wrote)
		io.Copy(io.Discard, br) // until the client half-closes
		for p := range ports {
			ng.WriteInterfaceStats(p, capture.InterfaceStats{Time: time.Now(), Recv: recv[p] + drops[p], Drop: drops[p], Delivered: -1})
		}
		ng.Close()
	}()
	return wrote
}

// TestLiveCaptureCountsEveryDrop: the frames emulab capture reports not
// captured are what the daemons' statistics blocks say they lost (their
// capture_drop), not only the gaps their records' comments report: a
// port's losses after its last record, and a port with no record after
// its losses, count too. A capture stopped early (SIGINT, -a duration)
// still gets the records the daemons hold and their statistics, and -c
// leaves out the records beyond it but not the statistics. The output
// ends with a statistics block per port.
func TestLiveCaptureCountsEveryDrop(t *testing.T) {
	gap := capture.GapComment("rx", 2)
	for _, tc := range []struct {
		name  string
		limit int
		want  int
	}{
		{"stopped", 0, 4},
		{"count", 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, b := filepath.Join(dir, "sw1.sock"), filepath.Join(dir, "h1.sock")
			// sw1: p1 loses 2 before its second record and 3 after its
			// last; p2 loses 4 and has a record before them only.
			wroteA := fakeCaptureDaemon(t, a, 2, []string{"rx", "tx", gap}, []int64{5, 4})
			wroteB := fakeCaptureDaemon(t, b, 1, []string{"rx"}, []int64{1})
			srcs := []*liveSource{
				{node: "sw1", control: a, ports: []string{"p1", "p2"}, descr: []string{"p1", "p2"}, link: capture.LinkTypeEthernet},
				{node: "h1", control: b, ports: []string{"eth0"}, descr: []string{"eth0"}, link: capture.LinkTypeEthernet},
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				// Stopped as soon as the daemons wrote their records,
				// before this process has them.
				<-wroteA
				<-wroteB
				cancel()
			}()
			var out bytes.Buffer
			var missed uint64
			n, err := streamLive(ctx, &out, false, srcs, tc.limit, nil, &missed)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.want || missed != 5+4+1 {
				t.Errorf("%d packets written, %d missed; want %d and 10 (the daemons' drops)", n, missed, tc.want)
			}
			data := out.Bytes()
			recs, st, err := capture.ReadAll(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			per := map[int]int64{}
			for _, rec := range recs {
				per[rec.Interface]++
			}
			for id, drop := range []int64{5, 4, 1} {
				s, ok := st[id]
				if !ok || s.Drop != drop || s.Delivered != per[id] || s.Start.IsZero() {
					t.Errorf("interface %d: statistics %+v (present %v), want isb_ifdrop %d, isb_usrdeliv %d", id, s, ok, drop, per[id])
				}
			}
			if tc.limit == 0 {
				if s := st[0]; s.Recv != 2+5 {
					t.Errorf("interface 0: isb_ifrecv %d, want the daemon's 7", s.Recv)
				}
				checkCapinfos(t, data)
			}
		})
	}
}

// checkCapinfos has Wireshark's capinfos read a capture whole: the file
// is valid and has a statistics block per interface. Without capinfos the
// check is left out (the rest of the test stands), except under CI=true,
// where a missing tool fails as every external tool does.
func checkCapinfos(t *testing.T, data []byte) {
	t.Helper()
	capinfos, err := exec.LookPath("capinfos")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("capinfos is required in CI: %v", err)
		}
		t.Log("capinfos not installed: the capture is not read by Wireshark's tools")
		return
	}
	file := filepath.Join(t.TempDir(), "out.pcapng")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(capinfos, file).CombinedOutput()
	if err != nil {
		t.Fatalf("capinfos: %v\n%s", err, out)
	}
	if ifs, stats := strings.Count(string(out), "Interface #"), strings.Count(string(out), "Number of stat entries = 1"); ifs == 0 || stats != ifs {
		t.Errorf("capinfos: %d interfaces, %d with one statistics block:\n%s", ifs, stats, out)
	}
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("tshark is required in CI: %v", err)
		}
		return
	}
	if out, err := exec.Command(tshark, "-n", "-r", file).CombinedOutput(); err != nil {
		t.Errorf("tshark -r: %v\n%s", err, out)
	}
}
