package registry_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/loginlimit"
	"github.com/tributary-io/tributary/schema/internal/srtest"
	"github.com/tributary-io/tributary/schema/registry"
)

// limitedRegistry is a registry with basic auth whose user ada has the
// password "right", and whose failed-login limit runs on *now.
func limitedRegistry(t *testing.T, now *time.Time) (*registry.BasicAuth, func(addr, user, password string) *httptest.ResponseRecorder) {
	t.Helper()
	creds := broker.OpenCredentialFile(filepath.Join(t.TempDir(), "credentials.json"))
	if err := creds.Set("ada", "SCRAM-SHA-512", "right", broker.DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
	auth := &registry.BasicAuth{Credentials: creds, Roles: registry.StaticRoles{"ada": registry.RoleAdmin},
		FailedLogins: &loginlimit.Limiter{Max: 3, Window: time.Minute, Now: func() time.Time { return *now }}}
	srv, err := registry.NewWithLog(context.Background(), registry.NewMemoryLog().Open(), registry.Config{Logger: srtest.Quiet(), Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return auth, func(addr, user, password string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/subjects", nil)
		req.RemoteAddr = addr + ":40000"
		req.SetBasicAuth(user, password)
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, req)
		return w
	}
}

// A name that is no user's costs one key derivation, as a wrong password
// does, so the answer's timing does not tell which users exist.
func TestBasicAuthUnknownUserDerivesLikeWrongPassword(t *testing.T) {
	now := time.Unix(1000, 0)
	auth, get := limitedRegistry(t, &now)
	for _, c := range []struct{ addr, user, password string }{
		{"192.0.2.1", "ada", "wrong"},
		{"192.0.2.2", "nobody", "wrong"},
	} {
		before := auth.Derivations()
		if w := get(c.addr, c.user, c.password); w.Code != 401 {
			t.Fatalf("%s/%s: %d, want 401", c.user, c.password, w.Code)
		}
		if n := auth.Derivations() - before; n != 1 {
			t.Fatalf("%s/%s: %d key derivations, want 1 (the same as any failed login)", c.user, c.password, n)
		}
	}
}

// After 3 wrong passwords from one address, its requests get 429 with
// Retry-After, even with the right password, while other addresses are
// served; once the window has passed, the right password works again.
func TestBasicAuthFailedLoginLimit(t *testing.T) {
	now := time.Unix(1000, 0)
	auth, get := limitedRegistry(t, &now)
	for i := 0; i < 3; i++ {
		if w := get("192.0.2.7", "ada", "guess"); w.Code != 401 {
			t.Fatalf("guess %d: %d, want 401", i+1, w.Code)
		}
	}
	before := auth.Derivations()
	w := get("192.0.2.7", "ada", "right")
	if w.Code != 429 || w.Header().Get("Retry-After") != "60" || !strings.Contains(w.Body.String(), "42901") || !strings.Contains(w.Body.String(), "Too many failed logins from 192.0.2.7") {
		t.Fatalf("after 3 failures: %d Retry-After=%q %s, want 429 42901 naming the address", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if auth.Derivations() != before {
		t.Fatal("a refused attempt still had its password checked")
	}
	if w := get("192.0.2.8", "ada", "right"); w.Code != 200 {
		t.Fatalf("another address: %d, want 200", w.Code)
	}
	now = now.Add(time.Minute)
	if w := get("192.0.2.7", "ada", "right"); w.Code != 200 {
		t.Fatalf("after the window: %d, want 200", w.Code)
	}
}

// A burst of wrong passwords for one user from a shared address locks out
// that user there, not the administrator at the same address. Before, the
// administrator got 429 with the right password for the rest of the
// minute.
func TestBasicAuthBurstDoesNotLockOutOtherUsers(t *testing.T) {
	now := time.Unix(1000, 0)
	_, get := limitedRegistry(t, &now)
	for i := 0; i < 10; i++ {
		if w := get("192.0.2.7", "bob", "guess"); w.Code != 401 && w.Code != 429 {
			t.Fatalf("bob's guess %d: %d, want 401 or 429", i+1, w.Code)
		}
	}
	if w := get("192.0.2.7", "bob", "guess"); w.Code != 429 {
		t.Fatalf("bob after his burst: %d, want 429", w.Code)
	}
	if w := get("192.0.2.7", "ada", "right"); w.Code != 200 {
		t.Fatalf("ada at the same address after bob's burst: %d %s, want 200", w.Code, w.Body)
	}
}
