package compat_test

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// kcatGroup runs `kcat -G` (librdkafka's balanced consumer) until it has
// read to the end of every partition, and returns the values it printed.
func kcatGroup(t *testing.T, addr, groupName, topic string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath, "-b", addr, "-G", groupName,
		// Not -o beginning: kcat would apply it to every assignment and
		// ignore the group's commits; a new group starts at the beginning
		// through auto.offset.reset instead.
		"-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n",
		topic)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("kcat -G %s %s: %v\n%s", groupName, topic, err, stderr)
	}
	return strings.Fields(string(out))
}

func values(from, to int) []string {
	var vs []string
	for i := from; i < to; i++ {
		vs = append(vs, fmt.Sprintf("v%06d", i))
	}
	return vs
}

func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	got = append([]string(nil), got...)
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s: got %d values (%s ... %s), want %d (%s ... %s)", what,
			len(got), first(got), last(got), len(want), first(want), last(want))
	}
}

// TestKcatGroupResumesAfterRestart: kcat in balanced-consumer mode reads a
// topic to its end and commits; after a broker restart on the same data, a
// second run reads only what was produced since.
func TestKcatGroupResumesAfterRestart(t *testing.T) {
	testenv.Needs(t, testenv.Kcat)
	if _, err := exec.LookPath(kcatPath); err != nil {
		t.Fatalf("kcat is missing: apt-get install -y kcat (.ci/run installs it)")
	}
	dir := t.TempDir()
	b := brokertest.StartGroupBroker(t, testenv.WithDataDir(dir))
	addr := b.Addr
	brokertest.CreateTopic(t, addr, "logins", 3, nil)
	brokertest.ProduceValues(t, addr, "logins", 0, 300)
	sameSet(t, "first run", kcatGroup(t, addr, "kcat-app", "logins"), values(0, 300))
	offs := brokertest.Committed(t, addr, "kcat-app")
	for p := int32(0); p < 3; p++ {
		if o, _ := offs.Lookup("logins", p); o.At != 100 {
			t.Fatalf("kcat committed partition %d at %d, want 100", p, o.At)
		}
	}

	b.Stop()
	brokertest.StartGroupBroker(t, testenv.WithDataDir(dir), testenv.WithAddr(addr))
	brokertest.ProduceValues(t, addr, "logins", 300, 450)
	sameSet(t, "run after the restart", kcatGroup(t, addr, "kcat-app", "logins"), values(300, 450))
}

func first(vs []string) string {
	if len(vs) == 0 {
		return "none"
	}
	return vs[0]
}

func last(vs []string) string {
	if len(vs) == 0 {
		return "none"
	}
	return vs[len(vs)-1]
}
