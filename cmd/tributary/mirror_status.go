package main

import (
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// startingStatus is the mirror's --status endpoint, listening before the
// mirror is built: with --audit-wal the start first looks in the target
// for the copies a killed mirror made, which takes as long as the target
// takes to answer (up to a minute), and an operator or a supervisor
// probing the status port should see a mirror that is starting, not a
// port nobody listens on. Until ready it answers 503 with the phase.
type startingStatus struct {
	handler atomic.Pointer[http.Handler]
	srv     *http.Server
	addr    net.Addr
}

func listenStatus(addr string) (*startingStatus, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &startingStatus{addr: ln.Addr()}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// ready hands the requests to h from now on.
func (s *startingStatus) ready(h http.Handler) { s.handler.Store(&h) }

func (s *startingStatus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.handler.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write([]byte(`{"state":"starting"}` + "\n"))
}

func (s *startingStatus) Close() error { return s.srv.Close() }
