package system_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// The attack of issue #34: a client naming itself tributary-mirror deletes
// _schemas of a running standalone. Before, the restarted registry gave
// the next new schema id 1 again, so every old record carrying id 1
// decoded with it. Now the restarted registry serves reads and refuses
// writes saying what happened, and restarted with --registry-accept-reset
// it continues above the highest id handed out (its checkpoint is in the
// data directory).
func TestStandaloneDeletedSchemasNeverReusesIDs(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	dir, addr, regAddr := t.TempDir(), testenv.FreeAddr(t), testenv.FreeAddr(t)
	start := func(extra ...string) *testenv.Process {
		t.Helper()
		p := testenv.StartProcess(t, append([]string{"standalone", "--data-dir", dir, "--listen", addr, "--registry-listen", regAddr}, extra...)...)
		testenv.WaitListening(t, p, regAddr, 60*time.Second)
		testenv.Eventually(t, 60*time.Second, "the registry is ready (its /healthz answers 200)", func() bool {
			resp, err := http.Get("http://" + regAddr + "/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		return p
	}
	register := func(schema string) (int, int, string) {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"schema": schema})
		resp, err := http.Post("http://"+regAddr+"/subjects/s/versions", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct {
			ID      int    `json:"id"`
			Message string `json:"message"`
		}
		json.NewDecoder(resp.Body).Decode(&got)
		return resp.StatusCode, got.ID, got.Message
	}
	stop := func(p *testenv.Process) {
		t.Helper()
		if err := p.Stop(30 * time.Second); err != nil {
			t.Fatalf("SIGTERM: %v\n%s", err, p.Output.String())
		}
	}

	p := start()
	if code, id, msg := register(`"string"`); code != 200 || id != 1 {
		t.Fatalf("register: %d id %d %s", code, id, msg)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("tributary-mirror"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).DeleteTopic(ctx, "_schemas")
	cl.Close()
	if err != nil {
		t.Fatalf("delete _schemas as tributary-mirror: %v", err)
	}
	stop(p)

	p = start()
	if code, id, msg := register(`"long"`); code != 500 || !strings.Contains(msg, "deleted and created again") || !strings.Contains(msg, "--registry-accept-reset") {
		t.Fatalf("register after _schemas was deleted: %d id %d %q; want 500 (50001) saying so and naming --registry-accept-reset", code, id, msg)
	}
	stop(p)

	start("--registry-accept-reset")
	if code, id, msg := register(`"long"`); code != 200 || id != 2 {
		t.Fatalf("register after --registry-accept-reset: %d id %d %s; want id 2", code, id, msg)
	}
}
