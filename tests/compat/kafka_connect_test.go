package compat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// Kafka Connect 4.4's distributed worker runs on Tributary: it creates its
// three internal topics compacted (it refuses to start on config, offset
// or status topics that are not), joins its group and serves its REST API.
func TestKafkaConnectDistributedWorkerStarts(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	b := testenv.StartBroker(t)
	testenv.StartKafkaConnect(t, b.Addr, "tributary-connect", nil)
	adm, _ := brokertest.NewAdmin(t, b.Addr)
	for _, topic := range []string{"tributary-connect-configs", "tributary-connect-offsets", "tributary-connect-status"} {
		rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		if c := brokertest.ConfigsByName(t, rcs, topic)["cleanup.policy"]; c.MaybeValue() != "compact" {
			t.Errorf("%s has cleanup.policy=%s, want compact", topic, c.MaybeValue())
		}
	}
}

// A file source connector runs in Kafka Connect 4.4's distributed worker
// on Tributary: created through Connect's REST API, it and its task reach
// RUNNING; the lines of its file, those written before it started and
// those appended while it runs, arrive in its topic in order; and the
// worker stores the task's source offset (the byte position after the
// last line sent) in its offset topic and reads it back.
func TestKafkaConnectFileSource(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	b := testenv.StartBroker(t)
	const topic, name = "connect-lines", "file-lines"
	brokertest.CreateTopic(t, b.Addr, topic, 1, nil)
	url := testenv.StartKafkaConnect(t, b.Addr, "tributary-connect-file", nil)

	file := filepath.Join(t.TempDir(), "lines.txt")
	var lines []string
	for i := range 50 {
		lines = append(lines, fmt.Sprintf("line %d of the file", i))
	}
	appendLines(t, file, lines[:20])

	config := map[string]any{"name": name, "config": map[string]string{
		"connector.class": testenv.KafkaConnectFileSource,
		"tasks.max":       "1",
		"file":            file,
		"topic":           topic,
		"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
		"value.converter": "org.apache.kafka.connect.storage.StringConverter",
	}}
	if code, body := connectREST(t, http.MethodPost, url+"/connectors", config); code != http.StatusCreated {
		t.Fatalf("creating the connector: HTTP %d: %s", code, body)
	}
	waitConnectorRunning(t, url, name)
	appendLines(t, file, lines[20:])

	records := brokertest.ConsumeAll(t, b.Addr, topic, len(lines))[0]
	for i, r := range records {
		if string(r.Value) != lines[i] || r.Key != nil {
			t.Fatalf("record %d in %s: key %q value %q, want no key and value %q", i, topic, r.Key, r.Value, lines[i])
		}
	}

	// The committed source offset: the whole file.
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`[{"partition":{"file":%q},"offset":{"position":%d}}]`, file, info.Size())
	testenv.Eventuallyf(t, 30*time.Second, func() (bool, string) {
		code, body := connectREST(t, http.MethodGet, url+"/connectors/"+name+"/offsets", nil)
		var offsets struct{ Offsets json.RawMessage }
		if code != http.StatusOK || json.Unmarshal(body, &offsets) != nil {
			t.Fatalf("reading the connector's offsets: HTTP %d: %s", code, body)
		}
		got := string(offsets.Offsets)
		return got == want, fmt.Sprintf("the connector's committed offsets did not reach the end of the file:\n got %s\nwant %s", got, want)
	})
}

// waitConnectorRunning waits until the connector and each of its tasks
// (at least one) report RUNNING, and fails the test at once if one
// reports FAILED, or if that takes over a minute.
func waitConnectorRunning(t *testing.T, url, name string) {
	t.Helper()
	type state struct{ State, Trace string }
	var status struct {
		Connector state
		Tasks     []state
	}
	testenv.Eventuallyf(t, time.Minute, func() (bool, string) {
		code, body := connectREST(t, http.MethodGet, url+"/connectors/"+name+"/status", nil)
		if code == http.StatusNotFound {
			// The worker has not read the connector's configuration back yet.
			return false, fmt.Sprintf("the worker does not know connector %s", name)
		}
		if code != http.StatusOK || json.Unmarshal(body, &status) != nil {
			t.Fatalf("connector status: HTTP %d: %s", code, body)
		}
		running := status.Connector.State == "RUNNING" && len(status.Tasks) > 0
		for _, s := range append([]state{status.Connector}, status.Tasks...) {
			if s.State == "FAILED" {
				t.Fatalf("connector %s failed: %s", name, body)
			}
			running = running && s.State == "RUNNING"
		}
		return running, fmt.Sprintf("connector %s and its tasks are not RUNNING; last status: %s", name, body)
	})
}

// connectREST sends a request with a JSON body (none if body is nil) to
// Kafka Connect's REST API and returns the answer's status and body.
func connectREST(t *testing.T, method, url string, body any) (int, []byte) {
	t.Helper()
	var in io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		in = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, in)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, url, err)
	}
	return resp.StatusCode, out
}

// appendLines appends lines, each ended by a newline, to file.
func appendLines(t *testing.T, file string, lines []string) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
