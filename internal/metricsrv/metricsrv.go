// Package metricsrv is the HTTP server of the daemons' Prometheus
// endpoints. The endpoint listens on a TCP port, often of the host's
// namespace (emulab up --metrics), where any local user can connect to a
// daemon that runs as root: what one client can hold must be bounded. A
// plain http.Server keeps a keep-alive connection open for as long as
// the client leaves it idle and a response's write for as long as the
// client does not read; 3000 idle connections held 120 MB of emuswitch
// for good.
package metricsrv

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Bounds of one client. A scrape is a few tens of KB, read at once by
// Prometheus (whose default scrape timeout is 10 s).
const (
	// MaxConns is the number of connections served at once; one more is
	// closed as soon as it is accepted. Prometheus keeps one per target.
	MaxConns = 64
	// ReadHeaderTimeout bounds a request's headers, WriteTimeout the
	// whole exchange from them to the response's last byte.
	ReadHeaderTimeout = 5 * time.Second
	WriteTimeout      = 10 * time.Second
	// IdleTimeout closes a keep-alive connection with no next request:
	// longer than Prometheus's default scrape interval (1 m), so a
	// scraper keeps its connection.
	IdleTimeout = 90 * time.Second
)

// Server returns the server of a /metrics handler.
func Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadHeaderTimeout, // a GET has no body
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    16 << 10,
	}
}

// Limit returns ln serving at most n connections at once: Accept closes
// those beyond at once (the client sees its connection closed) rather
// than leave them queued, so a client holding n open cannot make a
// scraper's connection wait in the backlog for its timeout.
func Limit(ln net.Listener, n int) net.Listener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n)}
}

type limitListener struct {
	net.Listener
	sem chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
		default:
			c.Close()
		}
	}
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
