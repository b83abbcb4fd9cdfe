package broker_test

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// stallFrom opens a connection from local that announces a request of size
// bytes and sends nothing more.
func stallFrom(t *testing.T, local, addr string, size uint32) *wire {
	t.Helper()
	w := dialFrom(t, local, addr)
	var frame [4]byte
	binary.BigEndian.PutUint32(frame[:], size)
	w.send(frame[:])
	return w
}

// timedProduce produces one record and returns how long the broker took.
func timedProduce(t *testing.T, cl *kgo.Client, topic string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("legit")}).FirstErr(); err != nil {
		t.Fatalf("the legitimate produce: %v", err)
	}
	return time.Since(start)
}

// On a SASL listener, connections that never log in cannot take the
// request budget: a frame before login larger than --sasl-max-receive-size
// closes the connection, smaller ones draw on a budget of their own, and
// an idle unauthenticated connection is closed after
// --connections-max-idle-unauthenticated. Before, eight such connections
// filled the budget and a logged-in client's produce waited for their
// read timeout.
func TestUnauthenticatedClientsCannotHoldTheBudget(t *testing.T) {
	dir := t.TempDir()
	setUser(t, dir, "alice", "SCRAM-SHA-256", "alice-secret")
	b, addrs := startListeners(t, func(c *broker.Config) {
		c.DataDir = dir
		c.QueuedMaxRequestBytes = 8 << 20
		c.QueuedMaxRequestBytesPerIP = 8 << 20 // this test is about login, not addresses
		c.RequestReadTimeout = 20 * time.Second
		c.ConnectionsMaxIdleUnauthenticated = time.Second
	}, broker.SASLPlaintext)
	addr := addrs[broker.SASLPlaintext]
	alice := newClient(t, addr, kgo.SASL(mechanisms("alice", "alice-secret")["SCRAM-SHA-256"]), kgo.AllowAutoTopicCreation())
	timedProduce(t, alice, "legit") // logged in and the topic created before the flood

	var big []*wire
	for range 8 {
		big = append(big, stallFrom(t, "127.0.0.1", addr, 1<<20))
	}
	for i, w := range big {
		if !w.closedByBroker() {
			t.Fatalf("connection %d announcing 1 MiB before login was kept open", i)
		}
	}
	for range 40 { // past the unauthenticated budget (16 × 512 KiB)
		stallFrom(t, "127.0.0.1", addr, 500<<10)
	}
	if took := timedProduce(t, alice, "legit"); took > 10*time.Second {
		t.Fatalf("a logged-in produce took %v while unauthenticated connections stalled", took)
	}
	if used := b.ConnStats().QueuedRequestBytes; used > 1<<20 {
		t.Errorf("unauthenticated connections hold %d bytes of the request budget", used)
	}
	idle := dialFrom(t, "127.0.0.1", addr)
	idle.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if !idle.closedByBroker() || time.Since(start) > 4*time.Second {
		t.Fatalf("an idle connection that never logged in stayed open %v", time.Since(start))
	}
}

// One address holds at most a quarter of the request budget and, by
// default, a tenth of the connection slots (following max.connections as
// it changes): another host keeps producing and connecting. Before, one
// address could fill both, and everyone else waited or was refused.
func TestOneAddressCannotTakeEveryoneElsesShare(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.QueuedMaxRequestBytes = 8 << 20
		c.MaxConnections = 40
		c.RequestReadTimeout = 20 * time.Second
	}))
	other := func() *kgo.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
		return newClient(t, b.Addr, kgo.Dialer(d.DialContext), kgo.AllowAutoTopicCreation())
	}
	cl := other()
	timedProduce(t, cl, "shared")
	base := b.ConnStats().Open // the other host's connections

	var stalled []*wire
	for range 4 { // up to the address's four slots; each 2 MiB: the whole budget
		stalled = append(stalled, stallFrom(t, "127.0.0.1", b.Addr, 2<<20))
	}
	if took := timedProduce(t, cl, "shared"); took > 10*time.Second {
		t.Fatalf("another host's produce took %v while one address stalled big requests", took)
	}
	if used := b.ConnStats().QueuedRequestBytes; used > 2<<20+64<<10 { // its share, and the produce's last bytes
		t.Errorf("one address holds %d bytes of the request budget, want at most a quarter (2 MiB)", used)
	}
	for _, w := range stalled {
		w.conn.Close()
	}

	testenv.Eventually(t, 10*time.Second, "the stalled connections to be forgotten", func() bool {
		return b.ConnStats().Open <= base
	})
	var held []*wire
	refused := 0
	for range 40 {
		w := dialFrom(t, "127.0.0.1", b.Addr)
		held = append(held, w)
	}
	for _, w := range held {
		w.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if closedOrServed(w) {
			refused++
		}
	}
	if refused != 40-4 {
		t.Errorf("%d of 40 connections from one address refused, want 36 (a tenth of max.connections=40 kept)", refused)
	}
	if err := other().Ping(context.Background()); err != nil {
		t.Fatalf("another host cannot connect: %v", err)
	}
	adm := kadm.NewClient(cl)
	if err := alterBroker(t, adm, []kadm.AlterConfig{set("max.connections", "100")}); err != nil {
		t.Fatal(err)
	}
	if got := brokerConfigs(t, adm, 0)["max.connections.per.ip"]; valueOf(got) != "10" {
		t.Errorf("max.connections.per.ip after max.connections=100: %s, want 10 (it follows)", valueOf(got))
	}
}

// closedOrServed reports whether the broker closed w at once (refused),
// answering an ApiVersions otherwise.
func closedOrServed(w *wire) bool {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	if _, err := w.conn.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		return true
	}
	var size [4]byte
	_, err := w.conn.Read(size[:])
	return err != nil
}

// loginPlain logs w in with SASL PLAIN.
func loginPlain(t *testing.T, w *wire, user, password string) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	wantCode(t, "SaslHandshake", w.roundTrip(hs).(*kmsg.SASLHandshakeResponse).ErrorCode, nil)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00" + user + "\x00" + password)
	wantCode(t, "SaslAuthenticate", w.roundTrip(auth).(*kmsg.SASLAuthenticateResponse).ErrorCode, nil)
}

// One logged-in principal holds at most its share of the request budget
// (a quarter), from however many addresses it connects: before, four
// connections of one account from two hosts held the whole budget.
func TestOnePrincipalCannotTakeEveryoneElsesShare(t *testing.T) {
	dir := t.TempDir()
	setUser(t, dir, "alice", "SCRAM-SHA-256", "alice-secret")
	setUser(t, dir, "mallory", "SCRAM-SHA-256", "mallory-secret")
	b, addrs := startListeners(t, func(c *broker.Config) {
		c.DataDir = dir
		c.QueuedMaxRequestBytes = 8 << 20
		c.QueuedMaxRequestBytesPerIP = 8 << 20 // the principal's share alone here
		c.RequestReadTimeout = 20 * time.Second
	}, broker.SASLPlaintext)
	addr := addrs[broker.SASLPlaintext]
	alice := newClient(t, addr, kgo.SASL(mechanisms("alice", "alice-secret")["SCRAM-SHA-256"]), kgo.AllowAutoTopicCreation())
	timedProduce(t, alice, "legit")
	for _, host := range []string{"127.0.0.1", "127.0.0.1", "127.0.0.3", "127.0.0.3"} {
		w := dialFrom(t, host, addr)
		loginPlain(t, w, "mallory", "mallory-secret")
		var frame [4]byte
		binary.BigEndian.PutUint32(frame[:], 2<<20)
		w.send(frame[:])
	}
	testenv.Eventually(t, 10*time.Second, "mallory's frames to be announced", func() bool {
		return b.ConnStats().ReadingRequests == 4
	})
	if used := b.ConnStats().QueuedRequestBytes; used > 2<<20 {
		t.Errorf("one principal holds %d bytes of the request budget, want at most a quarter (2 MiB)", used)
	}
	if took := timedProduce(t, alice, "legit"); took > 10*time.Second {
		t.Fatalf("alice's produce took %v while mallory stalled big requests", took)
	}
}
