package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server serves a Registry over HTTP: /metrics in Prometheus' formats, and
// / a page linking to it.
type Server struct {
	reg  *Registry
	ln   net.Listener
	srv  *http.Server
	done chan error // Serve's return, once

	closeOnce sync.Once
	closeErr  error
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves
// reg there on a goroutine of its own until Close. It listens before it
// returns, so that an address it cannot listen on is its error, at once.
func Serve(addr string, reg *Registry) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %q: %w", addr, err)
	}
	s := &Server{reg: reg, ln: ln, done: make(chan error, 1)}
	s.srv = &http.Server{Handler: reg.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Handler serves the registry: /metrics, and / a page linking to it.
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		Registry: r.reg, ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, indexPage)
	})
	return mux
}

const indexPage = `<!DOCTYPE html>
<html><head><title>saber-hx metrics</title></head>
<body><h1>saber-hx</h1><p><a href="/metrics">Metrics</a> (Prometheus)</p></body></html>
`

// Addr is the address the server listens on (with the port it picked for
// port 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the address of the metrics page.
func (s *Server) URL() string { return "http://" + s.Addr() + "/metrics" }

// Registry is the registry the server serves.
func (s *Server) Registry() *Registry { return s.reg }

// Close stops the server: it stops listening, lets the scrapes under way
// finish (for up to five seconds, then closes their connections) and
// returns once its goroutine has. Later calls return the first's error.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Server) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("metrics: close %s: %w", s.Addr(), err)
	}
	return nil
}
