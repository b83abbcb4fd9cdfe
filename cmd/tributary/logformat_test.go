package main_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// With --log-format json every line a long-running command logs is one JSON
// object with the time, level and message, so a log shipper can filter on
// its fields; an unknown format is refused before anything starts.
func TestLogFormatJSON(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	addr, regAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--log-format", "json", "--data-dir", t.TempDir(), "--listen", addr, "--registry-listen", regAddr)
	testenv.WaitListening(t, p, regAddr, 60*time.Second)
	testenv.Run(t, "a\nb\n", 0, "produce", "--brokers="+addr, "--topic", "clicks")
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p.Output.String())
	}
	lines := strings.Split(strings.TrimSpace(p.Output.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("standalone logged %d line(s), want its start and stop:\n%s", len(lines), p.Output.String())
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "tributary ") {
			continue // the start banners, on stdout (Output holds both streams)
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("log line is not JSON (%v): %s", err, l)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("log line has no %q: %s", k, l)
			}
		}
	}

	if out := testenv.RunStderr(t, 1, "topics", "list", "--log-format", "yaml"); !strings.Contains(out, `unknown log format "yaml"`) {
		t.Errorf("--log-format yaml said %q", out)
	}
}
