package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker"
)

// A burst of wrong passwords for one user from an address (a shared NAT)
// locks out that user there, not the administrator logging in from the
// same address, over PLAIN or SCRAM. Before, the administrator was refused
// for the rest of the minute (internal/loginlimit).
func TestFailedLoginBurstDoesNotLockOutOtherUsers(t *testing.T) {
	var dataDir string
	_, addrs := startListeners(t, func(c *broker.Config) { dataDir = c.DataDir }, broker.SASLPlaintext)
	setUser(t, dataDir, "admin", "SCRAM-SHA-512", "admin-secret")
	login := func(m sasl.Mechanism) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs[broker.SASLPlaintext]), kgo.RequestRetries(0), kgo.SASL(m))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	for range 12 { // past the limit of 10 a minute
		if err := login(plain.Auth{User: "bob", Pass: "guess"}.AsMechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("bob's guess: %v", err)
		}
	}
	if err := login(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()); err != nil {
		t.Fatalf("admin over PLAIN after bob's burst: %v", err)
	}
	if err := login(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()); err != nil {
		t.Fatalf("admin over SCRAM after bob's burst: %v", err)
	}
}
