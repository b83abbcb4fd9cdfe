package registry_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/loginlimit"
	"github.com/tributary-io/tributary/internal/metrics"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/schema/internal/srtest"
	"github.com/tributary-io/tributary/schema/registry"
)

// TestRegistryMetrics runs a node on a real broker with its metrics on a
// metrics endpoint: registering a schema and having an incompatible one
// refused show in the request counts, the rejection counter and the state
// gauges, and /readyz says the node caught up.
func TestRegistryMetrics(t *testing.T) {
	bootstrap, topic := testBroker(t), uniqueTopic(t)
	node, err := registry.Start(registry.Config{Topic: topic, Logger: srtest.Quiet()}, func(ctx context.Context) (registry.Log, error) {
		return registry.OpenKafkaLog(ctx, registry.KafkaLogConfig{Bootstrap: []string{bootstrap}, Topic: topic, Logger: srtest.Quiet()})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	ms := metrics.New()
	ms.AddReadyCheck("registry", node.Ready)
	if err := ms.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer ms.Close(context.Background())
	addr := serve(t, func(ctx context.Context, ln net.Listener) error {
		return node.ServeWithMetrics(ctx, ln, ms.Registry())
	})

	post := func(schema string) int {
		body := `{"schema": ` + schema + `}`
		resp, err := http.Post("http://"+addr+"/subjects/users-value/versions", "application/vnd.schemaregistry.v1+json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(`"{\"type\":\"record\",\"name\":\"u\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"}]}"`); code != 200 {
		t.Fatalf("registering: %d", code)
	}
	if code := post(`"{\"type\":\"record\",\"name\":\"u\",\"fields\":[{\"name\":\"a\",\"type\":\"string\"}]}"`); code != http.StatusConflict {
		t.Fatalf("registering an incompatible schema: %d, want 409", code)
	}

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + ms.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testenv.Eventually(t, 10*time.Second, "/readyz answers 200", func() bool { code, _ := get("/readyz"); return code == 200 })
	_, text := get("/metrics")
	for _, want := range []string{
		`tributary_registry_requests_total{code="200",endpoint="POST /subjects/{subject}/versions"} 1`,
		`tributary_registry_requests_total{code="409",endpoint="POST /subjects/{subject}/versions"} 1`,
		"tributary_registry_compatibility_rejections_total 1",
		"tributary_registry_schemas 1",
		"tributary_registry_subjects 1",
		"tributary_registry_ready 1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", text)
	}
}

// Refused logins are counted by reason: each wrong password as
// bad_credentials, and each attempt refused unchecked past the limit as
// rate_limited.
func TestRegistryLoginMetrics(t *testing.T) {
	creds := broker.OpenCredentialFile(filepath.Join(t.TempDir(), "credentials.json"))
	if err := creds.Set("ada", "SCRAM-SHA-512", "right", broker.DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
	auth := &registry.BasicAuth{Credentials: creds, Roles: registry.StaticRoles{"ada": registry.RoleAdmin},
		FailedLogins: &loginlimit.Limiter{Max: 2}}
	mem := registry.NewMemoryLog()
	node, err := registry.Start(registry.Config{Logger: srtest.Quiet(), Auth: auth}, func(context.Context) (registry.Log, error) { return mem.Open(), nil })
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	ms := metrics.New()
	if err := ms.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer ms.Close(context.Background())
	addr := serve(t, func(ctx context.Context, ln net.Listener) error {
		return node.ServeWithMetrics(ctx, ln, ms.Registry())
	})
	for _, want := range []int{401, 401, 429} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/subjects", nil)
		req.SetBasicAuth("ada", "guess")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("wrong password: %d, want %d", resp.StatusCode, want)
		}
	}
	resp, err := http.Get("http://" + ms.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`tributary_registry_logins_refused_total{reason="bad_credentials"} 2`,
		`tributary_registry_logins_refused_total{reason="rate_limited"} 1`,
		"tributary_registry_writes_refused 0",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}
