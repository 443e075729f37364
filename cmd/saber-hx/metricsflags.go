package main

import (
	"flag"
	"fmt"
	"io"
	"net"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/metrics"
)

// addMetricsFlag registers --metrics-addr on fs (ysb, bench, run).
func addMetricsFlag(fs *flag.FlagSet) *string {
	return fs.String("metrics-addr", "", "serve Prometheus metrics at this address (host:port), e.g. 127.0.0.1:9464; empty: off")
}

// serveMetrics serves eng's metrics at addr, and says where on stderr;
// with addr empty it does nothing (nil). An address that is not host:port
// is a usage error; one it cannot listen on (in use, not this host's) an
// error naming it. The server's Registry takes the run's sources
// (AddSource) and, with eng nil, its engines (as begin does); Close it.
func serveMetrics(addr string, eng *engine.Engine, stderr io.Writer) (*metrics.Server, error) {
	if addr == "" {
		return nil, nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, usagef("--metrics-addr %q: want host:port, e.g. 127.0.0.1:9464: %v", addr, err)
	}
	reg := metrics.NewRegistry(metrics.Options{})
	if eng != nil {
		reg.AddEngine(eng)
	}
	srv, err := metrics.Serve(addr, reg)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	fmt.Fprintf(stderr, "saber-hx: serving Prometheus metrics at %s\n", srv.URL())
	return srv, nil
}
