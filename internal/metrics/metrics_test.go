package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The endpoints answer over a real listener: /healthz always, /readyz only
// while every check passes, naming the failing one otherwise.
func TestServerEndpoints(t *testing.T) {
	s := New()
	var zkErr error
	s.AddReadyCheck("data_dir", func() error { return nil })
	s.AddReadyCheck("zookeeper", func() error { return zkErr })
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	base := "http://" + s.Addr()

	if code, body := get(t, base+"/healthz"); code != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz while ready: %d %q", code, body)
	}
	zkErr = errors.New("session expired")
	code, body := get(t, base+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "zookeeper: session expired") || strings.Contains(body, "data_dir") {
		t.Fatalf("/readyz with ZooKeeper down: %d %q", code, body)
	}
	code, body = get(t, base+"/metrics")
	if code != 200 || !strings.Contains(body, "go_goroutines") || !strings.Contains(body, "process_open_fds") {
		t.Fatalf("/metrics: %d, runtime collectors missing:\n%.500s", code, body)
	}
}

// Close stops the listener; a second Close and a Close without Start are
// harmless.
func TestServerClose(t *testing.T) {
	if err := New().Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := New()
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Fatal("still serving after Close")
	}
}
