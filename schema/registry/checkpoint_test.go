package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkpointNode runs a node on mem with the checkpoint at path.
func checkpointNode(t *testing.T, mem *MemoryLog, path string, acceptReset bool) *Server {
	t.Helper()
	srv, err := NewWithLog(t.Context(), mem.Open(), Config{Logger: quiet(), Checkpoint: path, AcceptReset: acceptReset})
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// registerOn registers a one-field record named name under subject and
// returns the status and body.
func registerOn(srv *Server, subject, name string) (int, string) {
	schema := fmt.Sprintf(`{"type":"record","name":%q,"fields":[{"name":"a","type":"int"}]}`, name)
	body, _ := json.Marshal(map[string]string{"schema": schema})
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/subjects/"+subject+"/versions", strings.NewReader(string(body))))
	return rec.Code, rec.Body.String()
}

func wantID(t *testing.T, srv *Server, subject, name string, id int) {
	t.Helper()
	code, body := registerOn(srv, subject, name)
	if want := fmt.Sprintf(`{"id":%d}`, id); code != 200 || strings.TrimSpace(body) != want {
		t.Fatalf("register %s under %s: %d %s, want %s", name, subject, code, body, want)
	}
}

func wantRefused(t *testing.T, srv *Server, says ...string) {
	t.Helper()
	code, body := registerOn(srv, "s", "New")
	if code != 500 || !strings.Contains(body, `"error_code":50001`) {
		t.Fatalf("register after the topic was lost: %d %s, want 500 with 50001", code, body)
	}
	for _, s := range append(says, "--registry-accept-reset") {
		if !strings.Contains(body, s) {
			t.Errorf("refusal %s does not say %q", body, s)
		}
	}
}

// A node whose topic was deleted (here: another MemoryLog, another topic
// id) refuses writes, serves reads, and after AcceptReset hands out ids
// above every id handed out before — as does a node without a checkpoint
// replaying the topic afterwards. Before, the new topic's first schema got
// id 1 again.
func TestCheckpointDeletedTopicNeverReusesIDs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schema-registry-checkpoint")
	old := checkpointNode(t, NewMemoryLog(), path, false)
	wantID(t, old, "a", "A", 1)
	wantID(t, old, "b", "B", 2)
	old.Close()

	lost := NewMemoryLog()
	wantRefused(t, checkpointNode(t, lost, path, false), "deleted and created again", "ids up to 2")
	for _, url := range []string{"/subjects", "/healthz"} {
		rec := httptest.NewRecorder()
		checkpointNode(t, lost, path, false).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
		if rec.Code != 200 || url == "/healthz" && !strings.Contains(rec.Body.String(), `"writes_refused":"Schema registry refuses writes`) {
			t.Errorf("GET %s while writes are refused: %d %s, want 200 (saying so on /healthz)", url, rec.Code, rec.Body)
		}
	}

	// One node per checkpoint, as in production: each is closed before
	// the next opens the file.
	accepted := checkpointNode(t, lost, path, true)
	wantID(t, accepted, "c", "C", 3)
	accepted.Close()
	wantID(t, checkpointNode(t, lost, "", false), "d", "D", 4) // the floor is on the topic
	wantID(t, checkpointNode(t, lost, path, false), "e", "E", 5)
}

// A topic that ends before the offset the checkpoint recorded was rewound
// (restored from an older copy): writes are refused.
func TestCheckpointRewoundTopicRefusesWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schema-registry-checkpoint")
	mem := NewMemoryLog()
	srv := checkpointNode(t, mem, path, false)
	wantID(t, srv, "a", "A", 1)
	wantID(t, srv, "b", "B", 2)
	srv.Close()
	older := &MemoryLog{id: mem.id, recs: mem.Records()[:1], changed: make(chan struct{})}
	wantRefused(t, checkpointNode(t, older, path, false), "rewound")
	wantID(t, checkpointNode(t, older, path, true), "c", "C", 3)
}

// A topic emptied while the node runs is found before the next write: the
// node still knows every id, but a restart would not.
func TestCheckpointTopicLostWhileRunning(t *testing.T) {
	mem := NewMemoryLog()
	srv := checkpointNode(t, mem, "", false)
	wantID(t, srv, "a", "A", 1)
	mem.mu.Lock()
	mem.id, mem.recs = "another", nil
	mem.mu.Unlock()
	wantRefused(t, srv, "deleted and created again while this node ran")
}

// A checkpoint that is not one this code wrote refuses writes, naming the
// file, rather than being guessed at.
func TestCheckpointDamagedRefusesWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schema-registry-checkpoint")
	for _, content := range []string{"", "{", `{"topic":"_schemas","highest_id":-1,"end_offset":0}`, `{"topic":"_schemas","extra":1}`, `{"topic":"_schemas"} {}`} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		srv, err := NewWithLog(context.Background(), NewMemoryLog().Open(), Config{Logger: quiet(), Checkpoint: path})
		if err != nil {
			t.Fatal(err)
		}
		code, body := registerOn(srv, "s", "A")
		srv.Close()
		if code != 500 || !strings.Contains(body, path) {
			t.Errorf("checkpoint %q: register answered %d %s, want 50001 naming %s", content, code, body, path)
		}
	}
}

// failingAppends is a log whose appends fail: the broker refused or
// timed out.
type failingAppends struct{ Log }

func (failingAppends) Append(context.Context, ...Record) (int64, error) {
	return 0, fmt.Errorf("broker unreachable")
}

// An id recorded in the checkpoint whose record never reached the topic
// (the append failed) is no loss: the restarted node takes writes.
func TestCheckpointReservedIDWithoutRecordIsNoLoss(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schema-registry-checkpoint")
	mem := NewMemoryLog()
	srv, err := NewWithLog(t.Context(), failingAppends{mem.Open()}, Config{Logger: quiet(), Checkpoint: path})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := registerOn(srv, "a", "A"); code != 500 {
		t.Fatalf("register with failing appends: %d %s", code, body)
	}
	srv.Close()
	wantID(t, checkpointNode(t, mem, path, false), "a", "A", 1)
}

// POST /tributary/accept-reset does what a restart with AcceptReset does,
// without stopping the process (in standalone, the broker): the node
// reads the topic afresh, appends the id floor and takes writes again. It
// refuses when there is nothing to accept.
func TestAcceptResetEndpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schema-registry-checkpoint")
	old := checkpointNode(t, NewMemoryLog(), path, false)
	wantID(t, old, "a", "A", 1)
	wantID(t, old, "b", "B", 2)
	old.Close()

	if need := RequiredRole(http.MethodPost, AcceptResetPath); need != RoleAdmin {
		t.Fatalf("POST %s needs role %s, want admin", AcceptResetPath, need)
	}
	lost := NewMemoryLog()
	node, err := Start(Config{Logger: quiet(), Checkpoint: path}, func(context.Context) (Log, error) { return lost.Open(), nil })
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	do := func(method, url, body string) (int, string) {
		rec := httptest.NewRecorder()
		node.ServeHTTP(rec, httptest.NewRequest(method, url, strings.NewReader(body)))
		return rec.Code, rec.Body.String()
	}
	register := func(name string) (int, string) {
		return do(http.MethodPost, "/subjects/s/versions", fmt.Sprintf(`{"schema":"{\"type\":\"record\",\"name\":\"%s\",\"fields\":[]}"}`, name))
	}
	if code, body := register("C"); code != 500 || !strings.Contains(body, AcceptResetPath) {
		t.Fatalf("register after the topic was lost: %d %s, want 50001 naming %s", code, body, AcceptResetPath)
	}
	if code, body := do(http.MethodPost, AcceptResetPath, ""); code != 200 || !strings.Contains(body, `"accepted":true`) {
		t.Fatalf("POST %s: %d %s", AcceptResetPath, code, body)
	}
	if code, body := register("C"); code != 200 || strings.TrimSpace(body) != `{"id":3}` {
		t.Fatalf("register after accepting: %d %s, want id 3", code, body)
	}
	if code, body := do(http.MethodPost, AcceptResetPath, ""); code != 422 || !strings.Contains(body, "not refused") {
		t.Fatalf("POST %s with nothing to accept: %d %s, want 42205", AcceptResetPath, code, body)
	}
}
