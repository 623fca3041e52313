package nicd

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/emufabric/emufabric/internal/daemontest"
)

// FuzzControl sends arbitrary bytes down the control socket of a running
// emunic: every line must be answered with one JSON response and the
// daemon must neither panic nor hang, whatever objects the input makes
// (a session's CQs, QPs and runs go with its connection). A capture's OK
// line is followed by its pcapng stream, which the half-close ends.
func FuzzControl(f *testing.F) {
	for _, s := range []string{
		`{"op":"status"}`,
		`{"op":"counters"}`,
		`{"op":"mlnx_qos"}`,
		`{"op":"link","state":"down"}` + "\n" + `{"op":"link","state":"up"}`,
		`{"op":"link","rate":"10G"}`,
		`{"op":"link","schedule":[{"after":"1s","state":"down"}]}`,
		`{"op":"capture"}`,
		`{"op":"reg_mr","length":4096,"access":7}`,
		`{"op":"create_cq","cqe":16}` + "\n" + `{"op":"create_qp","send_cq":1,"recv_cq":1,"max_send_wr":4,"max_recv_wr":4}` + "\n" +
			`{"op":"post_recv","qp":2,"wr":{"wr_id":1}}` + "\n" + `{"op":"poll_cq","cq":1,"max":4}` + "\n" + `{"op":"destroy_qp","qp":2}`,
		`{"op":"create_cq","cqe":16}` + "\n" + `{"op":"create_qp","send_cq":1,"recv_cq":1}` + "\n" +
			`{"op":"perf_bw","bw":{"qp":2,"cq":1,"depth":4,"iters":8,"cq_mod":1}}`,
		`{"op":"perf_lat","lat":{"qp":1,"cq":1,"iters":-1}}`,
		`{"op":"sm","what":"routes"}`,
		`{"op":"perfquery","lid":1}`,
		`{"op":"dereg_mr","mr":7}`,
		"{not json\n" + `{"op":"status"}`,
		`{"op":"status"}{"op":"status"}`,
		"\x00\xff\n\n",
	} {
		f.Add([]byte(s + "\n"))
	}
	_, ctl := pairOfDaemons(f, testLab(f, ""))
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.Contains(data, []byte("timeout")) {
			// poll_cq may wait up to a minute, as asked: slow, not a hang.
			t.Skip()
		}
		br := daemontest.Converse(t, ctl[0], data)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) == 0 && err != nil {
				return
			}
			var r Response
			if jerr := json.Unmarshal(line, &r); jerr != nil {
				t.Fatalf("response %q is not JSON: %v", line, jerr)
			}
			if !r.OK && r.Error == "" {
				t.Fatalf("failure without an error: %q", line)
			}
			if r.OK && bytes.Equal(bytes.TrimSpace(line), []byte(`{"ok":true}`)) && bytes.Contains(data, []byte("capture")) {
				return // the rest may be the capture's pcapng
			}
		}
	})
}
