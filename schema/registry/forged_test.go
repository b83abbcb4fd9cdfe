package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/schema/internal/srtest"
	"github.com/tributary-io/tributary/schema/registry"
)

// Records that got onto _schemas without coming from a registry — here
// written straight into the log, past the broker's admission rule — are
// skipped by every node: a forged id 2^31-1 does not move the id counter,
// a forged tombstone does not remove a live version.
func TestForgedRecordsOnSchemasTopic(t *testing.T) {
	b := testenv.StartBroker(t)
	first := kafkaNode(t, b.Addr, registry.DefaultTopic)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss, err := first.Client.CreateSchema(ctx, "s", sr.Schema{Schema: `"string"`})
	if err != nil || ss.ID != 1 {
		t.Fatalf("register: id %d, %v", ss.ID, err)
	}
	forged := []broker.InternalRecord{
		{Key: []byte(`{"keytype":"SCHEMA","subject":"t","version":1,"magic":1}`),
			Value: []byte(`{"subject":"t","version":1,"id":2147483647,"schema":"\"int\"","deleted":false}`)},
		{Key: []byte(`{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}`)}, // tombstone of a live version
		{Key: []byte(`not json`), Value: []byte(`{`)},
	}
	if _, err := b.AppendInternal(ctx, registry.DefaultTopic, 0, forged); err != nil {
		t.Fatal(err)
	}
	second := kafkaNode(t, b.Addr, registry.DefaultTopic) // replays the forged records
	for name, node := range map[string]*srtest.Registry{"tailing node": first, "replaying node": second} {
		got, err := node.Client.SchemaByVersion(ctx, "s", 1)
		if err != nil || got.ID != 1 {
			t.Errorf("%s: s version 1 after a forged tombstone: %+v, %v", name, got, err)
		}
		if _, err := node.Client.SchemaByID(ctx, 2147483647); err == nil {
			t.Errorf("%s: serves the forged schema id 2147483647", name)
		}
	}
	ss, err = second.Client.CreateSchema(ctx, "u", sr.Schema{Schema: `"long"`})
	if err != nil || ss.ID != 2 {
		t.Fatalf("next registration after the forged records: id %d, %v; want id 2", ss.ID, err)
	}
}
