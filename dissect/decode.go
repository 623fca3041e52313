package dissect

import (
	"bufio"
	"errors"
	"io"

	"github.com/emufabric/emufabric/wire/capture"
)

// Decode reads a pcap, pcapng or pcap-with-ERF capture from r and writes one
// JSON object per frame to w, each on its own line and starting with
// "frame" (counted from 1). pcapng frames also carry "interface" and, when
// the file has one, their "comment".
//
// A frame that does not decode is written with the members decoded so far
// and an "error" member; decoding goes on with the next frame. Decode then
// returns a *FrameError for the first such frame. A damaged capture file
// (not a frame) stops decoding with the reader's error.
func Decode(r io.Reader, w io.Writer) error {
	cr, err := capture.Open(bufio.NewReader(r))
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	var first *FrameError
	var rec capture.Record
	for n := 1; ; n++ {
		err := cr.Next(&rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			bw.Flush()
			return &FrameError{Frame: n, Err: err}
		}
		o := Object{{"frame", n}}
		if cr.Format() == capture.FormatPcapNG {
			o = o.Add("interface", rec.Interface)
			if rec.Comment != "" {
				o = o.Add("comment", rec.Comment)
			}
		}
		o = o.Add("len", len(rec.Data))
		if rec.OrigLen != len(rec.Data) {
			o = o.Add("orig_len", rec.OrigLen)
		}
		d, err := Record(&rec)
		o = append(o, d...)
		if err == nil && rec.OrigLen > len(rec.Data) {
			err = errCaptureTruncated(rec.OrigLen, len(rec.Data))
		}
		if err != nil {
			o = o.Add("error", err.Error())
			if first == nil {
				first = &FrameError{Frame: n, Err: err}
			}
		}
		if _, err := bw.Write(EncodeLine(o)); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if first != nil {
		return first
	}
	return nil
}
