package broker_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker"
)

// startSASL starts a broker with a SASL_PLAINTEXT listener and the user
// alice (password "alice-secret") for both SCRAM mechanisms.
func startSASL(t *testing.T) string {
	t.Helper()
	return startSASLLogging(t, nil)
}

// startSASLLogging is startSASL logging into logs, when set.
func startSASLLogging(t *testing.T, logs *logBuffer) string {
	t.Helper()
	dir := t.TempDir()
	setUser(t, dir, "alice", "SCRAM-SHA-256", "alice-secret")
	setUser(t, dir, "alice", "SCRAM-SHA-512", "alice-secret")
	_, addrs := startListeners(t, func(c *broker.Config) {
		c.DataDir = dir
		if logs != nil {
			c.Logger = logs.logger()
		}
	}, broker.SASLPlaintext)
	return addrs[broker.SASLPlaintext]
}

func mechanisms(user, password string) map[string]sasl.Mechanism {
	return map[string]sasl.Mechanism{
		"PLAIN":         plain.Auth{User: user, Pass: password}.AsMechanism(),
		"SCRAM-SHA-256": scram.Auth{User: user, Pass: password}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: user, Pass: password}.AsSha512Mechanism(),
	}
}

// TestSASLMechanismsWithKgo: franz-go logs in with each mechanism and
// produces and consumes.
func TestSASLMechanismsWithKgo(t *testing.T) {
	addr := startSASL(t)
	for name, mech := range mechanisms("alice", "alice-secret") {
		t.Run(name, func(t *testing.T) {
			roundTrip(t, addr, "sasl-"+strings.ToLower(name), 10, kgo.SASL(mech))
		})
	}
}

// TestSASLWrongCredentialsRefused: a wrong password and an unknown user
// are refused with SASL_AUTHENTICATION_FAILED, whatever the mechanism, and
// the broker logs the client's address, the user and the mechanism.
func TestSASLWrongCredentialsRefused(t *testing.T) {
	var logs logBuffer
	addr := startSASLLogging(t, &logs)
	for _, who := range []struct{ user, password string }{{"alice", "wrong"}, {"mallory", "alice-secret"}} {
		for name, mech := range mechanisms(who.user, who.password) {
			t.Run(who.user+"/"+name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var clients localAddrs
				cl := newClient(t, addr, kgo.SASL(mech), kgo.RequestRetries(0), clients.dialer(nil))
				err := cl.Ping(ctx)
				if !errors.Is(err, kerr.SaslAuthenticationFailed) {
					t.Fatalf("login as %s with %s: got %v, want SASL_AUTHENTICATION_FAILED", who.user, name, err)
				}
				wantLogged(t, &logs, &clients, "SASL authentication failed", "user="+who.user, "mechanism="+name)
			})
		}
	}
}

// TestRequestsBeforeSASLAreRefused: on a SASL listener, ApiVersions is
// answered, but a Metadata request without logging in closes the
// connection unanswered.
func TestRequestsBeforeSASLAreRefused(t *testing.T) {
	addr := startSASL(t)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))

	api := kmsg.NewPtrApiVersionsRequest()
	api.SetVersion(0)
	if _, err := rawRequest(conn, 1, api); err != nil {
		t.Fatalf("ApiVersions before login: %v", err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	if body, err := rawRequest(conn, 2, md); err == nil {
		t.Fatalf("Metadata before login was answered (%d bytes)", len(body))
	} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("Metadata before login: want the connection closed, got %v", err)
	}
}
