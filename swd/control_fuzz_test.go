package swd

import (
	"encoding/json"
	"testing"

	"github.com/emufabric/emufabric/internal/daemontest"
)

// FuzzControl sends arbitrary bytes down the control socket of a running
// daemon, as a client (or a confused program) could: every line must be
// answered with one JSON response and the daemon must neither panic nor
// hang; a capture's OK line is followed by its pcapng stream, which a
// half-close ends.
func FuzzControl(f *testing.F) {
	for _, s := range []string{
		`{"op":"status"}`,
		`{"op":"counters","port":"p1"}`,
		`{"op":"link","port":"p1","state":"down"}` + "\n" + `{"op":"link","port":"p1","state":"up"}`,
		`{"op":"link","port":"p2","rate":"10G","delay":"2us","loss":0.5,"corrupt":0.001}`,
		`{"op":"link","port":"p1","schedule":[{"after":"1s","state":"down"},{"after":"2s","state":"up"}]}`,
		`{"op":"link","port":"p1","schedule":[]}`,
		`{"op":"capture","ports":["p1","p2"]}`,
		`{"op":"capture","ports":["p1","p1"]}`,
		`{"op":"link","port":"p1","rate":"99999999999999999999T"}`,
		`{"op":"link","port":"p1","delay":"-1us"}`,
		`{"op":"status","op":"counters"}`,
		`{"op":"status"}{"op":"status"}`,
		"{not json\n" + `{"op":"status"}`,
		"\x00\xff\n\n",
		`[1,2,3]`,
	} {
		f.Add([]byte(s + "\n"))
	}
	td := startTestDaemon(f, false)
	f.Fuzz(func(t *testing.T, data []byte) {
		br := daemontest.Converse(t, td.ctl, data)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) == 0 && err != nil {
				return
			}
			var r struct {
				OK    bool   `json:"ok"`
				Error string `json:"error"`
				Ports any    `json:"ports"`
			}
			if jerr := json.Unmarshal(line, &r); jerr != nil {
				t.Fatalf("response %q is not JSON: %v", line, jerr)
			}
			if !r.OK && r.Error == "" {
				t.Fatalf("failure without an error: %q", line)
			}
			if names, ok := r.Ports.([]any); ok && r.OK && len(names) > 0 {
				if _, isCapture := names[0].(string); isCapture {
					return // the rest is the capture's pcapng
				}
			}
		}
	})
}
