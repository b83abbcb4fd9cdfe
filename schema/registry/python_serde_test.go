package registry_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// pythonSerde runs a script of Confluent's Python client (confluent-kafka
// with its schema registry serializers) against a registry node on a real
// broker, passing the registry's URL, the broker and a fresh topic. The
// tests call it first, so it declares what they start.
func pythonSerde(t *testing.T, script string) {
	t.Helper()
	testenv.Needs(t, testenv.Python)
	if err := exec.Command("python3", "-c", "import confluent_kafka.schema_registry, fastavro, jsonschema, google.protobuf").Run(); err != nil {
		t.Fatalf("Python's confluent-kafka with its Avro, JSON and Protobuf serializers is missing: python3 -m pip install 'confluent-kafka[schemaregistry,avro,json,protobuf]' (scripts/install-deps.sh does it)")
	}
	broker := testBroker(t)
	node := kafkaNode(t, broker, uniqueTopic(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join("testdata", "python", script)
	topic := fmt.Sprintf("serde-%d", time.Now().UnixNano())
	out, err := exec.CommandContext(ctx, "python3", path, node.URL, broker, topic).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", path, err, out)
	}
	t.Logf("%s", out)
}

// TestPythonAvroReferences: Confluent's AvroSerializer and AvroDeserializer
// round-trip a record whose schema uses a type from another subject
// (a schema reference); the reference is served back, and the referenced
// subject cannot be deleted while used (42206).
func TestPythonAvroReferences(t *testing.T) { pythonSerde(t, "avro_references.py") }

// TestPythonJSONSchema: Confluent's JSONSerializer and JSONDeserializer
// round-trip a record through a broker and the registry (schemaType JSON),
// the serializer refuses a record its schema refuses, and the registry
// refuses an incompatible evolution naming the rule.
func TestPythonJSONSchema(t *testing.T) { pythonSerde(t, "json_schema.py") }

// TestPythonProtobuf: Confluent's ProtobufSerializer registers a schema as
// a base64 descriptor and ProtobufDeserializer fetches it back
// (?format=serialized); a record round-trips through a broker.
func TestPythonProtobuf(t *testing.T) { pythonSerde(t, "protobuf.py") }

// TestPythonJSONReferences: Confluent's JSONSerializer validates and
// JSONDeserializer reads a record whose schema "$ref"s another subject's
// schema through a reference; an evolution over an incompatible referenced
// version is refused naming the field, and the referenced version cannot
// be deleted while used (42206).
func TestPythonJSONReferences(t *testing.T) { pythonSerde(t, "json_references.py") }

// TestPythonProtobufReferences: Confluent's ProtobufSerializer registers a
// file's import under its own subject and the message's schema with a
// reference to it; ProtobufDeserializer resolves it back, an incompatible
// evolution is refused naming the field, and the imported file cannot be
// deleted while used (42206).
func TestPythonProtobufReferences(t *testing.T) { pythonSerde(t, "protobuf_references.py") }

// TestPythonContracts: Confluent's client registers a schema with metadata
// and a rule set, gets both back, serializes with the latest version, and
// another contract for the same text gets another id.
func TestPythonContracts(t *testing.T) { pythonSerde(t, "contracts.py") }

// TestPythonContexts: Confluent's client with a base URL in a context
// registers and reads that context's ids, which the default context uses
// for another schema; /contexts lists it.
func TestPythonContexts(t *testing.T) { pythonSerde(t, "contexts.py") }
