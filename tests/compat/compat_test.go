// Package compat_test is where tests of third-party Kafka clients live
// (librdkafka through kcat and Python's confluent-kafka, kafka-python,
// sarama, Apache Kafka's Java clients, tools, Streams and Connect): each
// runs a client as its users run it against a broker started through the
// broker's public API (testenv, internal/brokertest). A client's behaviour
// here is a promise to its users: these tests fail when a change to the
// broker breaks a real client, whatever the broker's own tests say.
//
// A test that starts a program or a JVM declares it with testenv.Needs and
// skips under -short; the Go clients (sarama) run in the test process and
// run under -short too.
package compat_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kcatPath is Debian's kcat (librdkafka), which scripts/install-deps.sh
// installs.
const kcatPath = "/usr/bin/kcat"

// runKcat runs kcat with args and stdin for at most timeout and returns
// what it printed; the test fails, with kcat's stderr, if kcat does.
func runKcat(t *testing.T, timeout time.Duration, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %v: %v\n%s", args, err, stderr.String())
	}
	return out.String()
}
