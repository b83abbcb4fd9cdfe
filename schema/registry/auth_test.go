package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
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

// authEndpoints is every route of the REST API with the role it needs:
// the specification of the roles, written independently of the code that
// enforces them.
var authEndpoints = []struct {
	method, path, body string
	need               registry.Role
}{
	{"GET", "/", "", registry.RoleReader},
	{"GET", "/subjects", "", registry.RoleReader},
	{"GET", "/subjects/s-value/versions", "", registry.RoleReader},
	{"GET", "/subjects/s-value/versions/1", "", registry.RoleReader},
	{"GET", "/subjects/s-value/versions/latest/schema", "", registry.RoleReader},
	{"GET", "/subjects/s-value/versions/1/referencedby", "", registry.RoleReader},
	{"POST", "/subjects/s-value", `{"schema":"\"string\""}`, registry.RoleReader},
	{"GET", "/schemas", "", registry.RoleReader},
	{"GET", "/schemas/types", "", registry.RoleReader},
	{"GET", "/schemas/ids/1", "", registry.RoleReader},
	{"GET", "/schemas/ids/1/schema", "", registry.RoleReader},
	{"GET", "/schemas/ids/1/subjects", "", registry.RoleReader},
	{"GET", "/schemas/ids/1/versions", "", registry.RoleReader},
	{"GET", "/config", "", registry.RoleReader},
	{"GET", "/config/s-value", "", registry.RoleReader},
	{"GET", "/mode", "", registry.RoleReader},
	{"GET", "/mode/s-value", "", registry.RoleReader},
	{"GET", "/healthz", "", registry.RoleReader},

	{"POST", "/subjects/s-value/versions", `{"schema":"\"string\""}`, registry.RoleWriter},
	{"POST", "/compatibility/subjects/s-value/versions/latest", `{"schema":"\"string\""}`, registry.RoleWriter},
	{"POST", "/compatibility/subjects/s-value/versions", `{"schema":"\"string\""}`, registry.RoleWriter},

	{"PUT", "/config", `{"compatibility":"BACKWARD"}`, registry.RoleAdmin},
	{"PUT", "/config/s-value", `{"compatibility":"FULL"}`, registry.RoleAdmin},
	{"DELETE", "/config/s-value", "", registry.RoleAdmin},
	{"DELETE", "/config", "", registry.RoleAdmin},
	{"PUT", "/mode", `{"mode":"READWRITE"}`, registry.RoleAdmin},
	{"PUT", "/mode/s-value", `{"mode":"READWRITE"}`, registry.RoleAdmin},
	{"DELETE", "/mode/s-value", "", registry.RoleAdmin},
	{"DELETE", "/mode", "", registry.RoleAdmin},
	{"DELETE", "/subjects/s-value/versions/1", "", registry.RoleAdmin},
	{"DELETE", "/subjects/s-value", "", registry.RoleAdmin},
	{"PATCH", "/subjects", "", registry.RoleAdmin}, // not in the API: closed to all but admins
	{"GET", "/contexts", "", registry.RoleReader},
	{"GET", "/contexts/.c/subjects", "", registry.RoleReader},
	{"POST", "/contexts/.c/subjects/s-value/versions", `{"schema":"\"string\""}`, registry.RoleWriter},
	{"DELETE", "/contexts/.c/subjects/s-value", "", registry.RoleAdmin},
	{"DELETE", "/contexts/.c", "", registry.RoleAdmin},
}

// TestRolesTable sends every endpoint as each kind of user and checks that
// a user gets through exactly when its role covers the endpoint: 403
// (40301) otherwise, and 401 (40101) with a challenge without valid
// credentials. Users are SCRAM credentials in a broker credential file, as
// `tributary users set` writes them.
func TestRolesTable(t *testing.T) {
	creds := broker.OpenCredentialFile(filepath.Join(t.TempDir(), "credentials.json"))
	for _, u := range []struct{ user, mech string }{
		{"rita", "SCRAM-SHA-512"}, {"will", "SCRAM-SHA-256"}, {"ada", "SCRAM-SHA-512"}, {"nobody", "SCRAM-SHA-512"},
	} {
		if err := creds.Set(u.user, u.mech, u.user+"-pw", broker.DefaultSCRAMIterations); err != nil {
			t.Fatal(err)
		}
	}
	auth := &registry.BasicAuth{Credentials: creds, Roles: registry.StaticRoles{
		"rita": registry.RoleReader, "will": registry.RoleWriter, "ada": registry.RoleAdmin,
	}, FailedLogins: &loginlimit.Limiter{Max: 1 << 20}} // every route is tried with a wrong password
	srv, err := registry.NewWithLog(context.Background(), registry.NewMemoryLog().Open(), registry.Config{Logger: srtest.Quiet(), Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })

	type caller struct {
		name, user, password string
		role                 registry.Role
		authenticated        bool
	}
	callers := []caller{
		{"anonymous", "", "", registry.RoleNone, false},
		{"wrong password", "ada", "rita-pw", registry.RoleNone, false},
		{"unknown user", "mallory", "x", registry.RoleNone, false},
		{"user without role", "nobody", "nobody-pw", registry.RoleNone, true},
		{"reader", "rita", "rita-pw", registry.RoleReader, true},
		{"writer", "will", "will-pw", registry.RoleWriter, true},
		{"admin", "ada", "ada-pw", registry.RoleAdmin, true},
	}
	for _, c := range callers {
		for _, e := range authEndpoints {
			t.Run(c.name+"/"+e.method+" "+e.path, func(t *testing.T) {
				if got := registry.RequiredRole(e.method, e.path); got != e.need {
					t.Errorf("RequiredRole = %s, want %s", got, e.need)
				}
				req, _ := http.NewRequest(e.method, hs.URL+e.path, strings.NewReader(e.body))
				if e.body != "" {
					req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
				}
				if c.user != "" {
					req.SetBasicAuth(c.user, c.password)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var body struct {
					Code    int    `json:"error_code"`
					Message string `json:"message"`
				}
				json.NewDecoder(resp.Body).Decode(&body)
				switch {
				case !c.authenticated:
					if resp.StatusCode != 401 || body.Code != 40101 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
						t.Fatalf("got %d %+v (challenge %q), want 401 with error_code 40101 and a Basic challenge",
							resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
					}
				case c.role < e.need:
					if resp.StatusCode != 403 || body.Code != 40301 || body.Message == "" {
						t.Fatalf("got %d %+v, want 403 with error_code 40301", resp.StatusCode, body)
					}
				default:
					if resp.StatusCode == 401 || resp.StatusCode == 403 {
						t.Fatalf("got %d %+v, want the request served", resp.StatusCode, body)
					}
				}
			})
		}
	}
}

// A changed password takes effect at the next request, though the old one
// was checked (and remembered) a moment before.
func TestBasicAuthPasswordChange(t *testing.T) {
	creds := broker.OpenCredentialFile(filepath.Join(t.TempDir(), "credentials.json"))
	if err := creds.Set("ada", "SCRAM-SHA-512", "old", broker.DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
	srv, err := registry.NewWithLog(context.Background(), registry.NewMemoryLog().Open(), registry.Config{Logger: srtest.Quiet(),
		Auth: &registry.BasicAuth{Credentials: creds, Roles: registry.StaticRoles{"ada": registry.RoleAdmin}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	status := func(password string) int {
		req := httptest.NewRequest("GET", "/subjects", nil)
		req.SetBasicAuth("ada", password)
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, req)
		return w.Code
	}
	if got := status("old"); got != 200 {
		t.Fatalf("old password: %d, want 200", got)
	}
	if err := creds.Set("ada", "SCRAM-SHA-512", "new", broker.DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
	if got := status("old"); got != 401 {
		t.Fatalf("old password after the change: %d, want 401", got)
	}
	if got := status("new"); got != 200 {
		t.Fatalf("new password: %d, want 200", got)
	}
}

func TestParseRoles(t *testing.T) {
	roles, err := registry.ParseRoles([]byte("# roles\nalice = admin\n\n  loader=Reader\nci= writer\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]registry.Role{"alice": registry.RoleAdmin, "loader": registry.RoleReader, "ci": registry.RoleWriter}
	for u, r := range want {
		if roles[u] != r {
			t.Errorf("%s: %s, want %s", u, roles[u], r)
		}
	}
	for _, bad := range []string{"alice admin\n", "alice = root\n", "a = reader\na = admin\n", "# nobody\n", "= reader\n"} {
		if _, err := registry.ParseRoles([]byte(bad)); err == nil {
			t.Errorf("%q parsed; want an error", bad)
		}
	}
}

// A node that cannot open its log tells why (503) only to users: others
// get 401, since the reason may name brokers and topics.
func TestUnavailableNodeAuthenticatesFirst(t *testing.T) {
	creds := broker.OpenCredentialFile(filepath.Join(t.TempDir(), "credentials.json"))
	if err := creds.Set("rita", "SCRAM-SHA-512", "rita-pw", broker.DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
	node, err := registry.Start(registry.Config{Logger: srtest.Quiet(), SyncTimeout: time.Second,
		Auth: &registry.BasicAuth{Credentials: creds, Roles: registry.StaticRoles{"rita": registry.RoleReader}}},
		func(context.Context) (registry.Log, error) {
			return nil, errors.New("brokers 10.0.0.1:9092 unreachable")
		})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	for _, c := range []struct {
		user string
		want int
	}{{"", 401}, {"rita", 503}} {
		req := httptest.NewRequest("GET", "/subjects", nil)
		if c.user != "" {
			req.SetBasicAuth(c.user, c.user+"-pw")
		}
		w := httptest.NewRecorder()
		node.ServeHTTP(w, req)
		if w.Code != c.want || (c.want == 401 && strings.Contains(w.Body.String(), "10.0.0.1")) {
			t.Errorf("user %q: %d %s, want %d", c.user, w.Code, w.Body, c.want)
		}
	}
}
