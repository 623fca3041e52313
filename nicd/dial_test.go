package nicd

import (
	"bytes"
	"context"
	"errors"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineWaiter is a log writer that closes seen once a line containing want
// was written.
type lineWaiter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// TestStartContextCancelWhileDialling: cancelling the context while the
// seqpacket-dial port retries makes StartContext return at once with the
// context's error (not after DialTimeout), leaving no file behind.
func TestStartContextCancelWhileDialling(t *testing.T) {
	dir := t.TempDir()
	lw := &lineWaiter{want: ": dialling", seen: make(chan struct{})}
	o := Options{Spec: testLab(t, ""), Node: "h1", Port: "seqpacket-dial:" + filepath.Join(dir, "nobody.sock"),
		Control: filepath.Join(dir, "ctl.sock"), Log: log.New(lw, "", 0)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		d   *Daemon
		err error
	}
	res := make(chan result, 1)
	go func() {
		d, err := StartContext(ctx, o)
		res <- result{d, err}
	}()
	select {
	case <-lw.seen:
	case r := <-res:
		t.Fatalf("StartContext returned before dialling: %v", r.err)
	}
	cancel()
	select {
	case r := <-res:
		if r.d != nil {
			r.d.Close()
		}
		if !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), "--port seqpacket-dial:") {
			t.Errorf("StartContext: %v, want context.Canceled naming the port", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("StartContext still dialling 10 s after cancel")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind: %s", e.Name())
	}
}
