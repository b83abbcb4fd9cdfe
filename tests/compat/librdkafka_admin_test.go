package compat_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestLibrdkafkaAdmin runs librdkafka's admin client (Python
// confluent-kafka, scripts/kafka/librdkafka_admin.py): create a topic with
// configs, describe and alter them, grow the topic, delete records
// (transactions: librdkafka_transactions_test.go).
func TestLibrdkafkaAdmin(t *testing.T) {
	testenv.Needs(t, testenv.Python)
	if err := exec.Command("python3", "-c", "import confluent_kafka").Run(); err != nil {
		t.Fatalf("Python's confluent-kafka is missing: python3 -m pip install confluent-kafka (scripts/install-deps.sh does it)")
	}
	b := testenv.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	script := filepath.Join("..", "..", "scripts", "kafka", "librdkafka_admin.py")
	out, err := exec.CommandContext(ctx, "python3", script, b.Addr).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	t.Logf("%s", out)
}
