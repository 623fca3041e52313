package ctlline

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("{\"op\":\"status\"}\n\nlast"), 16)
	for _, want := range []string{"{\"op\":\"status\"}\n", "\n", "last"} {
		got, err := Read(br)
		if err != nil || string(got) != want {
			t.Fatalf("Read = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := Read(br); !errors.Is(err, io.EOF) {
		t.Fatalf("Read at the end: %v, want EOF", err)
	}
}

// A line without a newline stops at MaxRequest, however much follows.
func TestReadBoundsALine(t *testing.T) {
	r := io.MultiReader(strings.NewReader(strings.Repeat(" ", MaxRequest)), endless{})
	if _, err := Read(bufio.NewReader(r)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("Read of an endless line: %v, want %v", err, ErrTooLong)
	}
	exact := strings.Repeat(" ", MaxRequest-1) + "\n"
	if got, err := Read(bufio.NewReader(strings.NewReader(exact))); err != nil || len(got) != MaxRequest {
		t.Fatalf("Read of a line of MaxRequest bytes: %d bytes, %v", len(got), err)
	}
}

// endless is a client that streams spaces and never a newline.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}
