package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testenv"
)

// How `tributary produce` picks the schema's format, refused before any
// service is reached: a JSON Schema in a .json file is not guessed (Avro
// schemas live in .json files too) but the error says --schema-type
// JSON; --message and --reference are refused for Avro; an unknown type
// names the three.
func TestProduceSchemaTypeFlags(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	dir := t.TempDir()
	jsonSchema := filepath.Join(dir, "order.json")
	avsc := filepath.Join(dir, "click.avsc")
	for f, text := range map[string]string{
		jsonSchema: `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"id": {"type": "string"}}}`,
		avsc:       `{"type": "record", "name": "Click", "fields": [{"name": "id", "type": "string"}]}`,
	} {
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := []string{"produce", "--brokers", "127.0.0.1:1", "--registry", "http://127.0.0.1:1", "--topic", "t"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--schema", jsonSchema}, "then say --schema-type JSON"},
		{[]string{"--schema", avsc, "--schema-type", "xml"}, `--schema-type "xml": AVRO, PROTOBUF or JSON`},
		{[]string{"--schema", avsc, "--message", "Click"}, "--message picks a message of a Protobuf schema"},
		{[]string{"--schema", avsc, "--reference", "a=" + avsc}, "--reference is for Protobuf and JSON Schema schemas"},
		{[]string{"--schema", jsonSchema, "--schema-type", "JSON", "--reference", "nofile"}, `--reference "nofile": want NAME=FILE`},
	} {
		if stderr := testenv.RunStderr(t, 1, append(base, tc.args...)...); !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: stderr %q, want it to say %q", tc.args, stderr, tc.want)
		}
	}
}
