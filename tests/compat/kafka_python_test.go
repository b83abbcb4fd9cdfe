package compat_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// kafka-python 3.0, the pure-Python client, produces and consumes in a
// group through Tributary: a first consumer reads half the records,
// commits and leaves; a second one of the same group resumes from those
// commits; between them every record is read exactly once, and its admin
// client describes the group and reads the commits.
func TestKafkaPythonGroup(t *testing.T) {
	testenv.Needs(t, testenv.Python)
	if err := exec.Command("python3", "-c", "import kafka").Run(); err != nil {
		t.Fatalf("Python's kafka-python is missing: python3 -m pip install kafka-python (scripts/install-deps.sh does it)")
	}
	const count = 400
	b := testenv.StartBroker(t, testenv.WithConfig(brokertest.FastGroups))
	brokertest.CreateTopic(t, b.Addr, "kpy", 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := filepath.Join("..", "..", "scripts", "kafka", "kafka_python_group.py")
	out, err := exec.CommandContext(ctx, "python3", script, b.Addr, "kpy", "kpy-group", "400").CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-python: %v\n%s", err, out)
	}
	for _, want := range []string{"produced 400", "distinct 400 duplicates 0", "listed 1 group Empty protocol_type", "committed 400"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kafka-python printed no %q:\n%s", want, out)
		}
	}
	offs := brokertest.Committed(t, b.Addr, "kpy-group")
	total := int64(0)
	for p := int32(0); p < 3; p++ {
		o, _ := offs.Lookup("kpy", p)
		total += o.At
	}
	if total != count {
		t.Errorf("kafka-python's commits cover %d records, want %d", total, count)
	}
	t.Logf("kafka-python:\n%s", out)
}
