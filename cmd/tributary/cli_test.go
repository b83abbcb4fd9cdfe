package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// run runs `tributary args...` with stdin and returns its stdout, failing
// the test if the exit status is not want.
func run(t *testing.T, stdin string, want int, args ...string) string {
	t.Helper()
	out, _ := runBoth(t, stdin, want, args...)
	return out
}

// runStderr is run for a command whose stderr (its error) is the point.
func runStderr(t *testing.T, want int, args ...string) string {
	t.Helper()
	_, stderr := runBoth(t, "", want, args...)
	return stderr
}

func runBoth(t *testing.T, stdin string, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("tributary %v: %v", args, err)
	}
	if code != want {
		t.Fatalf("tributary %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, out, errBuf.String())
	}
	return string(out), errBuf.String()
}

// TestStandaloneCLI is what a user does after `make run`: the standalone
// process with its registry, then topics, produce, consume and schema
// commands against it.
func TestStandaloneCLI(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	addr, regAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--data-dir", t.TempDir(), "--listen", addr, "--registry-listen", regAddr)
	testenv.WaitListening(t, p, regAddr, 60*time.Second)
	brokers, registry := "--brokers="+addr, "--registry=http://"+regAddr

	run(t, "", 0, "topics", "create", brokers, "--partitions", "3", "--config", "retention.ms=3600000", "clicks")
	if out := run(t, "", 0, "topics", "describe", brokers, "clicks"); strings.Count(out, "clicks") != 3 {
		t.Fatalf("describe shows:\n%s", out)
	}
	run(t, "", 1, "topics", "create", brokers, "--config", "cleanup.policy=shred", "shredded")
	run(t, "", 0, "topics", "create", brokers, "--config", "cleanup.policy=compact", "compacted")
	run(t, "a\nb\nc\n", 0, "produce", brokers, "--topic", "clicks")
	out := run(t, "", 0, "consume", brokers, "--topic", "clicks", "--offset", "beginning", "--max-messages", "3")
	lines := strings.Fields(out)
	if len(lines) != 3 || !strings.Contains(out, "a") || !strings.Contains(out, "b") || !strings.Contains(out, "c") {
		t.Fatalf("consumed %q, want a, b and c", out)
	}

	schemas := filepath.Join("..", "..", "testdata", "schemas")
	reg := run(t, "", 0, "schema", "register", registry, "--subject", "pageviews-value", "--file", filepath.Join(schemas, "pageview.avsc"))
	if !strings.Contains(reg, "version 1 id 1") {
		t.Fatalf("register said %q", reg)
	}
	if out := run(t, "", 0, "schema", "list", registry); strings.TrimSpace(out) != "pageviews-value" {
		t.Fatalf("list said %q", out)
	}
	if out := run(t, "", 0, "schema", "get", registry, "--id", "1"); !strings.Contains(out, "PageView") {
		t.Fatalf("get --id 1 said %q", out)
	}
	run(t, "", 0, "schema", "check", registry, "--subject", "pageviews-value", "--file", filepath.Join(schemas, "pageview-v2.avsc"))
	// The reason is printed, not only the verdict.
	if out := run(t, "", 1, "schema", "check", registry, "--subject", "pageviews-value", "--file", filepath.Join(schemas, "servicecall.avsc")); !strings.Contains(out, "incompatible") || !strings.Contains(out, "cannot read data written with version 1") {
		t.Fatalf("check of an unrelated schema said %q, want the verdict and its reason", out)
	}
	// JSON Schema, with the rule that was broken and where.
	dir := t.TempDir()
	v1, v2 := filepath.Join(dir, "v1.json"), filepath.Join(dir, "v2.json")
	os.WriteFile(v1, []byte(`{"type":"object","properties":{"page":{"type":"string"}}}`), 0o644)
	os.WriteFile(v2, []byte(`{"type":"object","properties":{"page":{"type":"string"},"member":{"type":"integer"}}}`), 0o644)
	run(t, "", 0, "schema", "register", registry, "--type", "json", "--subject", "clicks-value", "--file", v1)
	if out := run(t, "", 1, "schema", "check", registry, "--type", "json", "--subject", "clicks-value", "--file", v2); !strings.Contains(out, "#/properties/member: property added to an open content model") {
		t.Fatalf("check of a JSON schema adding a property to an open model said %q, want the rule and where", out)
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p.Output.String())
	}
}
