package broker_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// startReauth starts a SASL_PLAINTEXT broker whose sessions last lifetime,
// with the users alice and bob (password "<user>-secret").
func startReauth(t *testing.T, lifetime time.Duration) string {
	t.Helper()
	dir := t.TempDir()
	for _, u := range []string{"alice", "bob"} {
		setUser(t, dir, u, "SCRAM-SHA-256", u+"-secret")
	}
	_, addrs := startListeners(t, func(c *broker.Config) {
		c.DataDir, c.ConnectionsMaxReauth = dir, lifetime
	}, broker.SASLPlaintext)
	return addrs[broker.SASLPlaintext]
}

// reauthHooks counts a client's connections, disconnections and
// SaslAuthenticate requests.
type reauthHooks struct{ connects, disconnects, authenticates atomic.Int64 }

func (h *reauthHooks) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.connects.Add(1)
	}
}

func (h *reauthHooks) OnBrokerDisconnect(kgo.BrokerMetadata, net.Conn) { h.disconnects.Add(1) }

func (h *reauthHooks) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 36 && err == nil {
		h.authenticates.Add(1)
	}
}

// TestReauthKeepsKgoProducing: with 2.5 s sessions, a franz-go producer
// logs in again on its connections (SCRAM takes two SaslAuthenticate
// requests a login) and keeps producing across several lifetimes without
// a connection being closed.
func TestReauthKeepsKgoProducing(t *testing.T) {
	testenv.Slow(t, "produces across 8 s of 2.5 s SASL sessions")
	addr := startReauth(t, 2500*time.Millisecond)
	hooks := &reauthHooks{}
	cl := newClient(t, addr, kgo.DefaultProduceTopic("reauth"), kgo.AllowAutoTopicCreation(),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()),
		kgo.WithHooks(hooks))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	n := 0
	testenv.Consistently(t, 8*time.Second, "producing across re-authentications", func() bool {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("still here")}).FirstErr(); err != nil {
			t.Fatalf("produce %d, %v after the first login: %v", n, time.Since(start), err)
		}
		n++
		return true
	})
	connects, auths := hooks.connects.Load(), hooks.authenticates.Load()
	t.Logf("%d records, %d connections, %d SaslAuthenticate requests, %d disconnections", n, connects, auths, hooks.disconnects.Load())
	if d := hooks.disconnects.Load(); d != 0 {
		t.Errorf("%d connections closed while producing", d)
	}
	if relogins := (auths - 2*connects) / 2; relogins < 2 {
		t.Errorf("%d re-authentications in 8 s of 2.5 s sessions, want at least 2", relogins)
	}
}

// rawLogin logs in with PLAIN on a raw connection (SaslHandshake v1,
// SaslAuthenticate v1) and returns the SaslAuthenticate response.
func rawLogin(t *testing.T, conn net.Conn, corr int32, user, password string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	body, err := rawRequest(conn, corr, hs)
	if err != nil {
		t.Fatalf("SaslHandshake: %v", err)
	}
	hr := kmsg.NewPtrSASLHandshakeResponse()
	hr.SetVersion(1)
	if err := hr.ReadFrom(body[4:]); err != nil || hr.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: %v %v", err, kerr.ErrorForCode(hr.ErrorCode))
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(1)
	auth.SASLAuthBytes = []byte("\x00" + user + "\x00" + password)
	body, err = rawRequest(conn, corr+1, auth)
	if err != nil {
		t.Fatalf("SaslAuthenticate: %v", err)
	}
	ar := kmsg.NewPtrSASLAuthenticateResponse()
	ar.SetVersion(1)
	if err := ar.ReadFrom(body[4:]); err != nil {
		t.Fatalf("SaslAuthenticate response: %v", err)
	}
	return ar
}

func wantClosed(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: answered, want the connection closed", what)
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("%s: want the connection closed, got %v", what, err)
	}
}

// TestExpiredSessionClosedAtNextRequest: a client told its session lasts
// 1.5 s that does not log in again is served until then and disconnected
// at its first request after it.
func TestExpiredSessionClosedAtNextRequest(t *testing.T) {
	const lifetime = 1500 * time.Millisecond
	addr := startReauth(t, lifetime)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))

	loggedIn := time.Now()
	ar := rawLogin(t, conn, 1, "alice", "alice-secret")
	if ar.ErrorCode != 0 || ar.SessionLifetimeMillis != lifetime.Milliseconds() {
		t.Fatalf("login: %v, session lifetime %d ms, want %d", kerr.ErrorForCode(ar.ErrorCode), ar.SessionLifetimeMillis, lifetime.Milliseconds())
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	_, err = rawRequest(conn, 3, md)
	if time.Since(loggedIn) < lifetime && err != nil {
		t.Fatalf("Metadata within the session: %v", err)
	}
	time.Sleep(time.Until(loggedIn.Add(lifetime + 200*time.Millisecond)))
	_, err = rawRequest(conn, 4, md)
	wantClosed(t, "Metadata after the session expired", err)
}

// TestReauthRules: a login again on the same connection extends the
// session; one as another user is refused and closes the connection.
func TestReauthRules(t *testing.T) {
	addr := startReauth(t, time.Minute)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if ar := rawLogin(t, conn, 1, "alice", "alice-secret"); ar.ErrorCode != 0 {
		t.Fatalf("login: %v", kerr.ErrorForCode(ar.ErrorCode))
	}
	if ar := rawLogin(t, conn, 3, "alice", "alice-secret"); ar.ErrorCode != 0 || ar.SessionLifetimeMillis != time.Minute.Milliseconds() {
		t.Fatalf("re-login as alice: %v, lifetime %d", kerr.ErrorForCode(ar.ErrorCode), ar.SessionLifetimeMillis)
	}
	if ar := rawLogin(t, conn, 5, "bob", "bob-secret"); ar.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("re-login as bob: %v, want SASL_AUTHENTICATION_FAILED", kerr.ErrorForCode(ar.ErrorCode))
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	_, err = rawRequest(conn, 7, md)
	wantClosed(t, "Metadata after a re-login as another user", err)
}
