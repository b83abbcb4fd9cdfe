package registry_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/schema/internal/srtest"
	"github.com/tributary-io/tributary/schema/registry"
)

// serve runs h's Serve on a free port until the test ends and returns the
// address.
func serve(t *testing.T, fn func(ctx context.Context, ln net.Listener) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// confluentError fetches path and decodes Confluent's error body.
func confluentError(t *testing.T, url string) (int, int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: body is not Confluent's error shape: %v", url, err)
	}
	return resp.StatusCode, body.Code, body.Message
}

// A node whose log cannot be opened serves anyway: every request, the
// health check included, gets 503 saying why.
func TestNodeUnavailableWhileLogCannotOpen(t *testing.T) {
	broken := errors.New("topic _schemas has 2 partitions")
	node, err := registry.Start(registry.Config{Logger: srtest.Quiet()}, func(context.Context) (registry.Log, error) { return nil, broken })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	addr := serve(t, node.Serve)
	for _, path := range []string{"/subjects", "/schemas/ids/1", "/healthz"} {
		status, code, msg := confluentError(t, "http://"+addr+path)
		if status != 503 || code != 503 || !strings.Contains(msg, "2 partitions") {
			t.Errorf("GET %s: %d %d %q, want 503 naming the broken topic", path, status, code, msg)
		}
	}
}

// A node that opened its log serves, and says so on /healthz.
func TestNodeServesOnceOpen(t *testing.T) {
	mem := registry.NewMemoryLog()
	node, err := registry.Start(registry.Config{Logger: srtest.Quiet()}, func(context.Context) (registry.Log, error) { return mem.Open(), nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	addr := serve(t, node.Serve)
	testenv.Eventually(t, 10*time.Second, "/healthz answers 200 once the log is open", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	resp, err := http.Get("http://" + addr + "/subjects")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /subjects: %v %v", resp, err)
	}
	resp.Body.Close()
}

// A client that sends its headers and then trickles its body is cut off
// by the read timeout instead of holding its connection for as long as it
// likes.
func TestSlowBodyCutOff(t *testing.T) {
	srv, err := registry.NewWithLog(context.Background(), registry.NewMemoryLog().Open(),
		registry.Config{Logger: srtest.Quiet(), ReadTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	addr := serve(t, srv.Serve)

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const bodyLen = 1 << 20
	if _, err := io.WriteString(conn, "POST /subjects/s/versions HTTP/1.1\r\nHost: registry\r\nContent-Type: application/json\r\n"+
		"Content-Length: "+strconv.Itoa(bodyLen)+"\r\n\r\n{\"schema\": \""); err != nil {
		t.Fatal(err)
	}
	ended := make(chan string, 1)
	go func() {
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			line = "connection closed: " + err.Error()
		}
		ended <- line
	}()
	// Sending the whole body at this pace would take about 15 hours.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.After(30 * time.Second)
	for {
		select {
		case line := <-ended:
			t.Logf("server ended the slow request: %s", strings.TrimSpace(line))
			return
		case <-giveUp:
			t.Fatal("the server still waits for a body trickled one byte every 50ms")
		case <-tick.C:
			if _, err := conn.Write([]byte("x")); err != nil {
				return // the server closed the connection
			}
		}
	}
}
