package broker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/tributary-io/tributary/broker/auth"
)

// After Max failed logins from an address, its logins are refused with
// SASL_AUTHENTICATION_FAILED saying why, even with the right password;
// once the window has passed it may log in again.
func TestFailedLoginLimit(t *testing.T) {
	dir := t.TempDir()
	if err := OpenCredentialFile(CredentialFilePath(dir)).Set("alice", auth.MechSCRAM512, "alice-secret", DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	b.logins.Failed.Max, b.logins.Failed.Window = 3, time.Minute
	b.logins.Failed.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go b.ServeListeners([]Listener{{Protocol: SASLPlaintext, Addr: ln.Addr().String()}}, []net.Listener{ln})
	t.Cleanup(func() { b.Close() })

	login := func(password string) error {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()), kgo.RequestRetries(0),
			kgo.SASL(plain.Auth{User: "alice", Pass: password}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	const flood = "too many failed logins from 127.0.0.1"
	for i := 0; ; i++ {
		err := login("guess")
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("guess %d: %v, want SASL_AUTHENTICATION_FAILED", i+1, err)
		}
		if strings.Contains(err.Error(), flood) {
			if i < 3 {
				t.Fatalf("refused as a flood after %d failures, limit 3", i)
			}
			break
		}
		if i == 10 {
			t.Fatalf("still no flood refusal after %d failed logins, limit 3: %v", i+1, err)
		}
	}
	if err := login("alice-secret"); !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), flood) {
		t.Fatalf("the right password during the refusal: %v, want the flood refusal", err)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if err := login("alice-secret"); err != nil {
		t.Fatalf("the right password after the window: %v", err)
	}
}
