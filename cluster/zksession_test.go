package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// An owner busy while its session expired and was replaced must still hear
// Expired before Renewed: read the other way round, it would wait for a
// renewal it had already consumed, unregistered for good.
func TestZKSessionRenewedNeverOvertakesExpired(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	logs := &logLines{}
	link := &testenv.NetLink{}
	s, err := cluster.DialZooKeeper(context.Background(), connect, logs.logger(t),
		cluster.WithSessionTimeout(time.Second), cluster.WithDialer(link.Dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	node := s.Paths.Root + "/owner"
	if err := s.CreateEphemeral(context.Background(), node, nil); err != nil {
		t.Fatal(err)
	}
	first := s.Conn.SessionID()

	// The owner reads neither channel while its session is lost, expired
	// by ZooKeeper and replaced.
	observer := session(t, connect)
	link.Cut()
	testenv.Eventually(t, 15*time.Second, "ZooKeeper expires the cut-off session", func() bool {
		ok, _, err := observer.Conn.Exists(node)
		return err == nil && !ok
	})
	link.Heal()
	testenv.Eventually(t, 15*time.Second, "a new session", func() bool {
		return logs.seen("zookeeper session established again") && s.Conn.SessionID() != first
	})

	testenv.Consistently(t, time.Second, "Renewed not ready before Expired was read", func() bool {
		select {
		case <-s.Renewed:
			return false
		default:
			return true
		}
	})
	for _, step := range []struct {
		name string
		ch   <-chan struct{}
	}{{"Expired", s.Expired}, {"Renewed", s.Renewed}} {
		select {
		case <-step.ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never received", step.name)
		}
	}
}

// Starting beside a ZooKeeper that is still booting (refusing connections,
// then accepting and closing them before giving a session, then silent)
// delays the brokers, but every one of them ends up registered.
func TestZooKeeperBrokersJoinAZooKeeperThatIsStillBooting(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	boot := newBootingZK(t, 2, 2, 1)
	logs := &logLines{}
	var wg sync.WaitGroup
	members := make([]*cluster.ZooKeeper, 3)
	errs := make([]error, 3)
	for i := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			self := cluster.Broker{ID: int32(i + 1), Host: "127.0.0.1", Port: int32(20001 + i)}
			members[i], errs[i] = cluster.JoinZooKeeper(ctx, connect, self, logs.logger(t),
				cluster.WithSessionTimeout(time.Second), cluster.WithDialer(boot.dial))
		}()
	}
	wg.Wait()
	for i, m := range members {
		if errs[i] != nil {
			t.Fatalf("broker %d: %v", i+1, errs[i])
		}
		t.Cleanup(func() { m.Close() })
	}
	observer := session(t, connect)
	testenv.Eventuallyf(t, 10*time.Second, func() (bool, string) {
		ids, _, err := observer.Conn.Children(observer.Paths.BrokerIDs())
		return err == nil && len(ids) == 3, strings.Join(ids, ",")
	})
	for _, m := range members {
		testenv.Eventuallyf(t, 10*time.Second, func() (bool, string) {
			err := m.Registered()
			return err == nil, fmt.Sprint(err)
		})
	}
	if !logs.seen("zookeeper client: failed to connect") || !logs.seen("zookeeper client: authentication failed") {
		t.Error("the refused and dropped connections were not logged")
	}
}

// A ZooKeeper that drops the connection right after giving a session (one
// that restarts while brokers start) delays the join; it neither fails it
// nor leaves the broker half set up.
func TestZooKeeperJoinOutlastsAConnectionDroppedAfterTheSession(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	var dials sync.Mutex
	dropped := 0
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, timeout)
		dials.Lock()
		defer dials.Unlock()
		if err != nil || dropped == 2 {
			return c, err
		}
		dropped++
		// The connect request goes through; the first request after it
		// finds the connection closed.
		return &dropAfterWrites{Conn: c, writes: 1}, nil
	}
	b1 := join(t, connect, 1, cluster.WithDialer(dial))
	if err := b1.Registered(); err != nil {
		t.Fatal(err)
	}
	observer := session(t, connect)
	if ok, _, err := observer.Conn.Exists(observer.Paths.Broker(1)); !ok || err != nil {
		t.Fatalf("broker 1 joined but is not in the registry: exists %v, %v", ok, err)
	}
	if dropped != 2 {
		t.Errorf("%d connections dropped, want 2", dropped)
	}
}

// dropAfterWrites closes its connection instead of making its next write
// once it has made writes of them.
type dropAfterWrites struct {
	net.Conn
	mu     sync.Mutex
	writes int
}

func (c *dropAfterWrites) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.writes == 0 {
		c.mu.Unlock()
		c.Conn.Close()
		return c.Conn.Write(p) // fails as a write to a closed socket does
	}
	c.writes--
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// bootingZK dials the way a booting ZooKeeper answers, in order: refusing,
// then accepting and closing at once, then accepting and never answering,
// then for real.
type bootingZK struct {
	closer net.Listener // accepts and closes at once

	mu                   sync.Mutex
	refuse, drop, silent int
}

func newBootingZK(t *testing.T, refuse, drop, silent int) *bootingZK {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return &bootingZK{closer: ln, refuse: refuse, drop: drop, silent: silent}
}

func (b *bootingZK) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.refuse > 0:
		b.refuse--
		return nil, errors.New("connection refused (test: ZooKeeper not listening yet)")
	case b.drop > 0:
		b.drop--
		return net.DialTimeout(network, b.closer.Addr().String(), timeout)
	case b.silent > 0:
		b.silent--
		client, server := net.Pipe()
		go io.Copy(io.Discard, server) // swallows the connect request, answers nothing
		return client, nil
	}
	return net.DialTimeout(network, addr, timeout)
}

// logLines records the messages of a logger that also writes to the test
// log, for tests that wait for a particular event: each as its message
// followed by its attributes (" key=value").
type logLines struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logLines) logger(t *testing.T) *slog.Logger {
	return slog.New(&recordingHandler{Handler: testenv.Logger(t, slog.LevelInfo).Handler(), l: l})
}

func (l *logLines) seen(prefix string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if strings.HasPrefix(m, prefix) {
			return true
		}
	}
	return false
}

// count tells how many recorded lines start with prefix and contain all
// of the given texts.
func (l *logLines) count(prefix string, texts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.HasPrefix(m, prefix) && !slices.ContainsFunc(texts, func(s string) bool { return !strings.Contains(m, s) }) {
			n++
		}
	}
	return n
}

type recordingHandler struct {
	slog.Handler
	l *logLines
}

func (h *recordingHandler) Handle(ctx context.Context, r slog.Record) error {
	h.l.mu.Lock()
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	h.l.msgs = append(h.l.msgs, line)
	h.l.mu.Unlock()
	return h.Handler.Handle(ctx, r)
}

func (h *recordingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &recordingHandler{Handler: h.Handler.WithAttrs(as), l: h.l}
}

func (h *recordingHandler) WithGroup(name string) slog.Handler {
	return &recordingHandler{Handler: h.Handler.WithGroup(name), l: h.l}
}
