// Package ctlline reads the requests of the daemons' control sockets: one
// JSON object per line, each line bounded, so that a client that never
// sends a newline costs the daemon at most MaxRequest bytes, not all the
// memory it is willing to stream.
package ctlline

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// MaxRequest bounds one request line. The longest real request, a link
// schedule of a lab file or a perftest work request, is a few KiB.
const MaxRequest = 1 << 20

// ErrTooLong is a line longer than MaxRequest; the connection is not in
// sync any more and is closed after the error is answered.
var ErrTooLong = fmt.Errorf("request longer than %d bytes", MaxRequest)

// Read reads one newline-terminated line of at most MaxRequest bytes. A
// last line without its newline is returned with a nil error; io.EOF
// comes only when nothing was left.
func Read(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > MaxRequest {
			return nil, ErrTooLong
		}
		line = append(line, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if len(line) > 0 && errors.Is(err, io.EOF) {
				return line, nil
			}
			return nil, err
		}
		return line, nil
	}
}
