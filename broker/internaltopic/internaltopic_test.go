package internaltopic

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/kafkaerr"
)

// TestShapeHoldsTheOwnersNeeds: _schemas gets its one partition and its
// compacted, never-expiring configs filled in, and anything contradicting
// them is refused with the code and owner named; other topics pass as
// asked.
func TestShapeHoldsTheOwnersNeeds(t *testing.T) {
	got, err := Shape("_schemas", 1, nil)
	if err != nil || got["cleanup.policy"] != "compact" || got["retention.ms"] != "-1" {
		t.Fatalf("_schemas shaped %v, %v", got, err)
	}
	if _, err := Shape("_schemas", 3, nil); kafkaerr.Code(err) != kerr.InvalidPartitions.Code || !strings.Contains(err.Error(), "schema registry") {
		t.Errorf("_schemas with 3 partitions: %v", err)
	}
	if _, err := Configs("_schemas", map[string]string{"retention.ms": "1000"}); kafkaerr.Code(err) != kerr.InvalidConfig.Code {
		t.Errorf("_schemas with a retention: %v", err)
	}
	if got, err := Shape("clicks", 7, map[string]string{"retention.ms": "1000"}); err != nil || got["retention.ms"] != "1000" || len(got) != 1 {
		t.Errorf("an ordinary topic changed: %v, %v", got, err)
	}
	if n, configs := AutoCreateShape("_audit", 4); n != 4 || configs != nil {
		t.Errorf("_audit auto-created with %d partitions, %v", n, configs)
	}
	if n, configs := AutoCreateShape("_schemas", 4); n != 1 || configs["cleanup.policy"] != "compact" {
		t.Errorf("_schemas auto-created with %d partitions, %v", n, configs)
	}
}

// TestRefusalAdmitsOnlyTheListedClients: without an authorizer an internal
// topic is changed only by the admitted client ids, and the refusal says
// which are admitted and which flag lists them.
func TestRefusalAdmitsOnlyTheListedClients(t *testing.T) {
	admitted := []string{"tributary-audit"}
	if msg := Refusal(admitted, "tributary-audit", "_audit", "write"); msg != "" {
		t.Errorf("an admitted client refused: %s", msg)
	}
	if msg := Refusal(admitted, "anyone", "clicks", "delete"); msg != "" {
		t.Errorf("an ordinary topic refused: %s", msg)
	}
	msg := Refusal(admitted, "anyone", "_audit", "delete")
	if !strings.Contains(msg, "tributary-audit") || !strings.Contains(msg, "--internal-clients") {
		t.Errorf("refusal %q does not say who is admitted and where", msg)
	}
	if msg := Refusal(nil, "anyone", "_schemas", "write"); !strings.Contains(msg, "no client ids are admitted") {
		t.Errorf("with none admitted: %q", msg)
	}
	if !Is("__transaction_state") || Is("clicks") {
		t.Error("Is disagrees with the list")
	}
}
