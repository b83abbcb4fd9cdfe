package registry_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/schema/registry"
)

// What FuzzParseRoles and a look at the file's path found: a long line
// was refused without saying which, a long bad role was quoted whole into
// every refused request, and a path that is not a roles file (a log, a
// device) was read whole into memory.
func TestRolesFileErrorsNameTheFileAndLine(t *testing.T) {
	write := func(text string) string {
		path := filepath.Join(t.TempDir(), "roles")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"unknown role", "alice = admin\nbob = root\n", []string{"line 2", `"root" is not a role`}},
		{"line too long", "alice = admin\n" + strings.Repeat("b", 70000) + " = reader\n", []string{"line 2", "at most 65536 bytes"}},
		{"long bad role", "alice = " + strings.Repeat("r", 10000) + "\n", []string{"line 1", "is not a role"}},
		{"larger than a roles file", "alice = admin\n" + strings.Repeat("# padding\n", registry.MaxRolesFile/10), []string{"larger than"}},
	} {
		path := write(tc.text)
		_, err := registry.OpenRolesFile(path)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, path) || len(msg) > 300+len(path) {
			t.Errorf("%s: error does not name %s, or is %d bytes long: %.300s", tc.name, path, len(msg), msg)
		}
		for _, want := range tc.want {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %.300q does not say %q", tc.name, msg, want)
			}
		}
	}
	if _, err := registry.OpenRolesFile(write("alice = admin\n" + strings.Repeat("# padding\n", registry.MaxRolesFile/10-2))); err != nil {
		t.Errorf("roles file just under the limit: %v", err)
	}
}

// A roles file that stops parsing refuses requests with 500 naming it,
// and tells the operator too: once per distinct error, not per request,
// and once more when it reads again.
func TestRolesFileErrorIsLoggedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "roles")
	if err := os.WriteFile(path, []byte("ada = admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	roles, err := registry.OpenRolesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	creds := broker.OpenCredentialFile(filepath.Join(t.TempDir(), "credentials.json"))
	if err := creds.Set("ada", "SCRAM-SHA-512", "pw", broker.DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
	get, count, logged := authServer(t, &registry.BasicAuth{Credentials: creds, Roles: roles})
	for i, text := range []string{"ada = root\n", "ada = root\n# same mistake, other size\n", "ada = admin\n"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		// The file's size changes each time, so it is read again.
		for range 3 {
			want := 500
			if i == 2 {
				want = 200
			}
			if got := get(); got != want {
				t.Fatalf("roles file %q: status %d, want %d", text, got, want)
			}
		}
	}
	if n := count("reading roles failed"); n != 1 {
		t.Errorf("%d log lines for one roles error over 6 requests, want 1:\n%s", n, logged())
	}
	if count(path) == 0 || count(`\"root\" is not a role`) == 0 {
		t.Errorf("the log line does not name %s and the mistake:\n%s", path, logged())
	}
	if n := count("roles readable again"); n != 1 {
		t.Errorf("%d lines saying the roles read again, want 1:\n%s", n, logged())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A credential store that cannot be read (here a damaged credentials
// file) refuses requests with 500 and tells the operator once, not at
// every request, and once more when it reads again.
func TestCredentialStoreErrorIsLoggedOnce(t *testing.T) {
	credPath := filepath.Join(t.TempDir(), "credentials.json")
	if err := os.WriteFile(credPath, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	get, count, logged := authServer(t, &registry.BasicAuth{Credentials: broker.OpenCredentialFile(credPath), Roles: registry.StaticRoles{"ada": registry.RoleAdmin}})
	for range 3 {
		if got := get(); got != 500 {
			t.Fatalf("damaged credentials file: status %d, want 500", got)
		}
	}
	if n := count("checking credentials failed"); n != 1 || count(credPath) == 0 {
		t.Errorf("%d log lines (naming %s?) for one credentials error over 3 requests, want 1:\n%s", n, credPath, logged())
	}
	if err := os.Remove(credPath); err != nil {
		t.Fatal(err)
	}
	if err := broker.OpenCredentialFile(credPath).Set("ada", "SCRAM-SHA-512", "pw", broker.DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got := get(); got != 200 {
			t.Fatalf("repaired credentials file: status %d, want 200", got)
		}
	}
	if n := count("credentials can be checked again"); n != 1 {
		t.Errorf("%d lines saying credentials can be checked again, want 1:\n%s", n, logged())
	}
}

// authServer is a registry behind auth. get asks it for /subjects as ada
// (password pw) and returns the status; count counts s in what it logged,
// logged is all of that.
func authServer(t *testing.T, auth *registry.BasicAuth) (get func() int, count func(s string) int, logged func() string) {
	t.Helper()
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{&mu, &buf}, nil))
	srv, err := registry.NewWithLog(context.Background(), registry.NewMemoryLog().Open(), registry.Config{Logger: logger, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	get = func() int {
		req := httptest.NewRequest("GET", "/subjects", nil)
		req.SetBasicAuth("ada", "pw")
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, req)
		return w.Code
	}
	logged = func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
	count = func(s string) int { return strings.Count(logged(), s) }
	return get, count, logged
}
