package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestStandaloneCLI is what a user does after `make run`: the standalone
// process with its registry, then topics, produce, consume and schema
// commands against it.
func TestStandaloneCLI(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	addr, regAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--data-dir", t.TempDir(), "--listen", addr, "--registry-listen", regAddr)
	testenv.WaitListening(t, p, regAddr, 60*time.Second)
	brokers, registry := "--brokers="+addr, "--registry=http://"+regAddr

	testenv.Run(t, "", 0, "topics", "create", brokers, "--partitions", "3", "--config", "retention.ms=3600000", "clicks")
	if out := testenv.Run(t, "", 0, "topics", "describe", brokers, "clicks"); strings.Count(out, "clicks") != 3 {
		t.Fatalf("describe shows:\n%s", out)
	}
	testenv.Run(t, "", 1, "topics", "create", brokers, "--config", "cleanup.policy=shred", "shredded")
	testenv.Run(t, "", 0, "topics", "create", brokers, "--config", "cleanup.policy=compact", "compacted")
	testenv.Run(t, "a\nb\nc\n", 0, "produce", brokers, "--topic", "clicks")
	out := testenv.Run(t, "", 0, "consume", brokers, "--topic", "clicks", "--offset", "beginning", "--max-messages", "3")
	lines := strings.Fields(out)
	if len(lines) != 3 || !strings.Contains(out, "a") || !strings.Contains(out, "b") || !strings.Contains(out, "c") {
		t.Fatalf("consumed %q, want a, b and c", out)
	}

	schemas := filepath.Join("..", "..", "testdata", "schemas")
	reg := testenv.Run(t, "", 0, "schema", "register", registry, "--subject", "pageviews-value", "--file", filepath.Join(schemas, "pageview.avsc"))
	if !strings.Contains(reg, "version 1 id 1") {
		t.Fatalf("register said %q", reg)
	}
	if out := testenv.Run(t, "", 0, "schema", "list", registry); strings.TrimSpace(out) != "pageviews-value" {
		t.Fatalf("list said %q", out)
	}
	if out := testenv.Run(t, "", 0, "schema", "get", registry, "--id", "1"); !strings.Contains(out, "PageView") {
		t.Fatalf("get --id 1 said %q", out)
	}
	testenv.Run(t, "", 0, "schema", "check", registry, "--subject", "pageviews-value", "--file", filepath.Join(schemas, "pageview-v2.avsc"))
	// The reason is printed, not only the verdict.
	if out := testenv.Run(t, "", 1, "schema", "check", registry, "--subject", "pageviews-value", "--file", filepath.Join(schemas, "servicecall.avsc")); !strings.Contains(out, "incompatible") || !strings.Contains(out, "cannot read data written with version 1") {
		t.Fatalf("check of an unrelated schema said %q, want the verdict and its reason", out)
	}
	// JSON Schema, with the rule that was broken and where.
	dir := t.TempDir()
	v1, v2 := filepath.Join(dir, "v1.json"), filepath.Join(dir, "v2.json")
	os.WriteFile(v1, []byte(`{"type":"object","properties":{"page":{"type":"string"}}}`), 0o644)
	os.WriteFile(v2, []byte(`{"type":"object","properties":{"page":{"type":"string"},"member":{"type":"integer"}}}`), 0o644)
	testenv.Run(t, "", 0, "schema", "register", registry, "--type", "json", "--subject", "clicks-value", "--file", v1)
	if out := testenv.Run(t, "", 1, "schema", "check", registry, "--type", "json", "--subject", "clicks-value", "--file", v2); !strings.Contains(out, "#/properties/member: property added to an open content model") {
		t.Fatalf("check of a JSON schema adding a property to an open model said %q, want the rule and where", out)
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p.Output.String())
	}
}
