package metricsrv

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// Connections beyond the limit are closed at once; those within it are
// served, and a closed one makes room.
func TestLimit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	srv := Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "emu_up 1\n") }))
	go srv.Serve(Limit(ln, n))
	defer srv.Close()

	get := func(c net.Conn) error {
		if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var held []net.Conn
	for i := 0; i < n; i++ {
		c := dial()
		defer c.Close()
		if err := get(c); err != nil {
			t.Fatalf("connection %d of %d: %v", i+1, n, err)
		}
		held = append(held, c) // idle, kept alive
	}
	extra := dial()
	defer extra.Close()
	if err := get(extra); err == nil {
		t.Fatalf("connection %d was served with %d held", n+1, n)
	}
	held[0].Close()
	// The server sees the close when its idle read ends; until then a
	// new connection may still be turned away.
	for {
		c := dial()
		err := get(c)
		c.Close()
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "reset") {
			t.Fatal(err)
		}
	}
}

// Every bound is set: a zero would mean none.
func TestServerBounds(t *testing.T) {
	s := Server(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Fatalf("unbounded server: %+v", s)
	}
}
