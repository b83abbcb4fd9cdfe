package schema_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/schema"
	"github.com/tributary-io/tributary/schema/internal/srtest"
)

// TestDeserializerResolvesReferences: a record whose writer schema uses a
// type from another subject (a reference, two levels deep) decodes, and
// WriterSchema is the schema made self-contained, so a file written with
// it (the loader's) reads without the registry.
func TestDeserializerResolvesReferences(t *testing.T) {
	reg := srtest.Start(t)
	ctx := context.Background()
	mustCreate := func(subject string, s sr.Schema) int {
		ss, err := reg.Client.CreateSchema(ctx, subject, s)
		if err != nil {
			t.Fatalf("register %s: %v", subject, err)
		}
		return ss.ID
	}
	mustCreate("geo", sr.Schema{Schema: `{"type":"record","name":"Geo","namespace":"ex","fields":[{"name":"lat","type":"double","default":0}]}`})
	mustCreate("address", sr.Schema{Schema: `{"type":"record","name":"Address","namespace":"ex","fields":[{"name":"city","type":"string"},{"name":"at","type":"Geo"}]}`,
		References: []sr.SchemaReference{{Name: "ex.Geo", Subject: "geo", Version: 1}}})
	id := mustCreate("people-value", sr.Schema{Schema: `{"type":"record","name":"Person","namespace":"ex","fields":[{"name":"home","type":"Address"},{"name":"work","type":["null","Address"]}]}`,
		References: []sr.SchemaReference{{Name: "ex.Address", Subject: "address", Version: 1}}})

	de, err := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	text, err := de.WriterSchema(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// The self-contained schema is a schema of its own: goavro takes it
	// with no registry, and encodes the record the test sends.
	codec, err := goavro.NewCodec(text)
	if err != nil {
		t.Fatalf("self-contained writer schema %s: %v", text, err)
	}
	if !strings.Contains(text, `"lat"`) || !strings.Contains(text, `"default":0`) {
		t.Errorf("self-contained writer schema lacks the referenced types or their defaults: %s", text)
	}
	home := map[string]any{"city": "London", "at": map[string]any{"lat": 51.5}}
	rec := map[string]any{"home": home, "work": goavro.Union("ex.Address", home)}
	body, err := codec.BinaryFromNative(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := de.Deserialize(ctx, append(schema.AppendEnvelope(nil, id), body...))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rec) {
		t.Errorf("decoded %v, want %v", got, rec)
	}
}
