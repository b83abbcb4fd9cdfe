// Package metrics is the operations endpoint every long-running Tributary
// process serves on --metrics-listen: Prometheus metrics on /metrics,
// liveness on /healthz and readiness on /readyz.
//
// What an operator may rely on:
//   - Each process has its own registry (Server.Registry): two brokers in one
//     test process never mix their numbers, and nothing registers globally.
//   - /healthz answers 200 as long as the process serves HTTP at all: a
//     supervisor restarts the process only when it is really stuck.
//   - /readyz answers 200 only when every readiness check the process
//     registered passes (data directory open, ZooKeeper session up, registry
//     caught up), and 503 naming each failing check otherwise, so a load
//     balancer or Kubernetes sends traffic only to a process that can serve it.
//   - Close stops the listener and waits for scrapes in progress, bounded by
//     its context.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric Tributary exports.
const Namespace = "tributary"

// Server holds a process's metrics registry and readiness checks, and serves
// them over HTTP once Start is called.
type Server struct {
	reg *prometheus.Registry

	mu     sync.Mutex
	checks map[string]func() error
	srv    *http.Server
	ln     net.Listener
	done   chan error
}

// New returns a server whose registry already holds the Go runtime and
// process collectors (memory, goroutines, open file descriptors), which
// operators expect on every Prometheus target.
func New() *Server {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &Server{reg: reg, checks: map[string]func() error{}}
}

// Registry is where the process registers its metrics and collectors.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// AddReadyCheck makes /readyz depend on check, which returns nil when the
// named dependency is ready. Checks run on every probe, so they must be
// cheap (read a flag, not dial a service). A second check with the same
// name replaces the first.
func (s *Server) AddReadyCheck(name string, check func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[name] = check
}

// Handler serves /metrics, /healthz and /readyz.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{
		// A collector that fails (a partition closing mid-scrape) costs
		// its own series, not the whole scrape.
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          s.reg,
		EnableOpenMetrics: true,
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", s.serveReady)
	return mux
}

// Ready runs every readiness check and returns the failures, joined, or nil.
func (s *Server) Ready() error {
	s.mu.Lock()
	names := make([]string, 0, len(s.checks))
	for n := range s.checks {
		names = append(names, n)
	}
	checks := make(map[string]func() error, len(s.checks))
	for n, c := range s.checks {
		checks[n] = c
	}
	s.mu.Unlock()
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		if err := checks[n](); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := s.Ready(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready:\n%s\n", strings.TrimSpace(err.Error()))
		return
	}
	fmt.Fprintln(w, "ready")
}

// Start listens on addr (host:port; port 0 picks a free one) and serves
// Handler in the background until Close.
func (s *Server) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics listener %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv, s.ln, s.done = srv, ln, make(chan error, 1)
	s.mu.Unlock()
	go func() { s.done <- srv.Serve(ln) }()
	return nil
}

// Addr is the address Start listens on, or "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops serving: no new connections, scrapes in progress finish
// until ctx ends. Close without Start does nothing.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Shutdown(ctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
