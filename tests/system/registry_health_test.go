package system_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A standalone process whose _schemas topic is damaged (two partitions:
// the registry cannot know one order of its writes) still serves Kafka;
// the registry answers 503 saying why, on requests and on /healthz.
func TestStandaloneWithBrokenSchemasTopic(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	dir := t.TempDir()
	meta, err := cluster.OpenStandalone(dir, cluster.Broker{ID: 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := meta.CreateTopic(context.Background(), "_schemas", 2, nil); err != nil {
		t.Fatal(err)
	}
	meta.Close()

	addr, regAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--data-dir", dir, "--listen", addr, "--registry-listen", regAddr)
	testenv.WaitListening(t, p, addr, 60*time.Second)
	testenv.WaitListening(t, p, regAddr, 60*time.Second)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics("clicks"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatalf("produce while _schemas is broken: %v", err)
	}
	if fs := cl.PollRecords(ctx, 1); fs.Err0() != nil || len(fs.Records()) != 1 || string(fs.Records()[0].Value) != "a" {
		t.Fatalf("fetch while _schemas is broken: %v %v", fs.Err0(), fs.Records())
	}

	for _, path := range []string{"/subjects", "/healthz"} {
		var code int
		var body struct {
			Code    int    `json:"error_code"`
			Message string `json:"message"`
		}
		for deadline := time.Now().Add(30 * time.Second); ; {
			resp, err := http.Get("http://" + regAddr + path)
			if err != nil {
				t.Fatal(err)
			}
			code = resp.StatusCode
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("GET %s: %d, body not in Confluent's shape: %v", path, code, err)
			}
			// 503 "replaying" first, then the reason once opening failed.
			if strings.Contains(body.Message, "2 partitions") || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if code != 503 || body.Code != 503 || !strings.Contains(body.Message, "2 partitions") {
			t.Errorf("GET %s: %d %+v, want 503 saying _schemas has 2 partitions", path, code, body)
		}
	}
	select {
	case <-p.Done():
		t.Fatalf("standalone exited:\n%s", p.Output.String())
	default:
	}
}

// The registry of a standalone process writes inside the broker's process:
// it registers schemas even when no client id is admitted to _schemas.
func TestStandaloneRegistryWritesInProcess(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	addr, regAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--data-dir", t.TempDir(), "--listen", addr, "--registry-listen", regAddr, "--internal-clients=")
	testenv.WaitListening(t, p, regAddr, 60*time.Second)
	testenv.Eventually(t, 60*time.Second, "the registry is ready (its /healthz answers 200)", func() bool {
		resp, err := http.Get("http://" + regAddr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	resp, err := http.Post("http://"+regAddr+"/subjects/s/versions", "application/json", strings.NewReader(`{"schema":"\"string\""}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		ID int `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 || body.ID != 1 {
		t.Fatalf("register with no client id admitted: %d id %d (%v)", resp.StatusCode, body.ID, err)
	}
}
