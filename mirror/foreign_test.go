package mirror_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
	"github.com/tributary-io/tributary/schema"
)

// A Protobuf topic and a JSON Schema topic, each schema referencing
// another subject: the mirror registers the referenced versions and then
// the schemas in the target registry, rewrites the ids (the message
// indexes after a Protobuf id untouched), and every record decodes on the
// target, through the target registry, to the value it has in the
// source. (audit's TestEndToEndProtobufAndJSON does the same with
// Confluent's Python serializers and deserializers.)
func TestMirrorCarriesProtobufAndJSONSchemas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srcReg, srcURL := startRegistry(t)
	dstReg, dstURL := startRegistry(t)
	for i := range 3 {
		s := fmt.Sprintf(`{"type":"record","name":"Other%d","fields":[]}`, i)
		if _, err := dstReg.CreateSchema(ctx, fmt.Sprintf("other%d-value", i), sr.Schema{Schema: s}); err != nil {
			t.Fatal(err)
		}
	}
	create := func(subject string, s sr.Schema) int {
		ss, err := srcReg.CreateSchema(ctx, subject, s)
		if err != nil {
			t.Fatal(err)
		}
		return ss.ID
	}
	create("ex/header.proto", sr.Schema{Type: sr.TypeProtobuf, Schema: `syntax = "proto3"; package ex; message Header { int64 time = 1; string server = 2; }`})
	pbID := create("orders-pb-value", sr.Schema{Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "ex/header.proto", Subject: "ex/header.proto", Version: 1}},
		Schema:     `syntax = "proto3"; package ex; import "ex/header.proto"; message Line { string sku = 1; } message Order { ex.Header header = 1; repeated Line lines = 2; }`})
	create("addr", sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object","properties":{"city":{"type":"string"}}}`})
	jsID := create("orders-js-value", sr.Schema{Type: sr.TypeJSON,
		References: []sr.SchemaReference{{Name: "addr.json", Subject: "addr", Version: 1}},
		Schema:     `{"type":"object","properties":{"header":{"type":"object","properties":{"time":{"type":"integer"}}},"ship":{"$ref":"addr.json"}}}`})

	src := testenv.StartBroker(t)
	target := testenv.StartBroker(t)
	createTopic(t, []string{src.Addr}, "orders-pb", 2)
	createTopic(t, []string{src.Addr}, "orders-js", 2)
	cl := newClient(t, []string{src.Addr})
	at := time.Now().Add(-time.Hour).UnixMilli()
	for i := range 50 {
		header := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(at+int64(i)))
		line := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), fmt.Sprint("sku-", i))
		pb := append(schema.AppendEnvelope(nil, pbID), 2, 2) // message index [1]: Order
		pb = protowire.AppendBytes(protowire.AppendTag(pb, 1, protowire.BytesType), header)
		pb = protowire.AppendBytes(protowire.AppendTag(pb, 2, protowire.BytesType), line)
		js := fmt.Appendf(schema.AppendEnvelope(nil, jsID), `{"header":{"time":%d},"ship":{"city":"c%d"}}`, at+int64(i), i)
		for topic, v := range map[string][]byte{"orders-pb": pb, "orders-js": js} {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: v}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{{Name: "dc1", Bootstrap: []string{src.Addr}, Registry: srcURL}},
		Target: []string{target.Addr}, TargetRegistry: dstURL, Topics: "^orders-(pb|js)$"})
	waitForCount(t, []string{target.Addr}, "orders-pb", 50, time.Minute)
	waitForCount(t, []string{target.Addr}, "orders-js", 50, time.Minute)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	srcDe, _ := schema.NewDeserializer(srcReg, schema.DeserializerConfig{})
	dstDe, _ := schema.NewDeserializer(dstReg, schema.DeserializerConfig{})
	want := map[string][]any{}
	for _, topic := range []string{"orders-pb", "orders-js"} {
		for _, recs := range readTopic(t, []string{src.Addr}, topic) {
			for _, r := range recs {
				v, err := srcDe.Deserialize(ctx, r.Value)
				if err != nil {
					t.Fatal(err)
				}
				want[topic] = append(want[topic], v)
			}
		}
	}
	for topic, srcID := range map[string]int{"orders-pb": pbID, "orders-js": jsID} {
		latest, err := dstReg.SchemaByVersion(ctx, topic+"-value", -1)
		if err != nil {
			t.Fatal(err)
		}
		var got []any
		for _, recs := range readTopic(t, []string{target.Addr}, topic) {
			for _, r := range recs {
				id, _, err := schema.DecodeEnvelope(r.Value)
				if err != nil || id != latest.ID || id == srcID {
					t.Fatalf("%s: a target record carries schema id %d (%v); the target registry has the schema as %d, the source as %d", topic, id, err, latest.ID, srcID)
				}
				v, err := dstDe.Deserialize(ctx, r.Value)
				if err != nil {
					t.Fatalf("%s: decoding on the target: %v", topic, err)
				}
				got = append(got, v)
			}
		}
		if len(got) != 50 || !sameValues(got, want[topic]) {
			t.Errorf("%s: the target decodes %d records, want the source's 50, equal", topic, len(got))
		}
		if len(latest.References) != 1 {
			t.Errorf("%s on the target has references %+v, want one", topic, latest.References)
		}
	}
}

// sameValues compares two lists of values in any order.
func sameValues(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
next:
	for _, x := range a {
		for i, y := range b {
			if !used[i] && reflect.DeepEqual(x, y) {
				used[i] = true
				continue next
			}
		}
		return false
	}
	return true
}
