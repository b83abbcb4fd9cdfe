package mirror

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/schema"
	"github.com/tributary-io/tributary/schema/registry"
)

func registryClient(t *testing.T) *sr.Client {
	t.Helper()
	srv, err := registry.NewWithLog(context.Background(), registry.NewMemoryLog().Open(), registry.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	cl, err := sr.NewClient(sr.URLs(hs.URL))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestSchemaMapCarriesReferences: an envelope whose schema references
// other subjects (a JSON "$ref" and a Protobuf import, two levels deep) is
// rewritten to a target id whose schema references the target's versions
// of the same subjects, which the mirror registered there first.
func TestSchemaMapCarriesReferences(t *testing.T) {
	ctx := context.Background()
	src, dst := registryClient(t), registryClient(t)
	// The target holds other versions first, so versions and ids differ.
	mustCreate(t, dst, "zip.json", sr.Schema{Schema: `{"type":"string","maxLength":10}`, Type: sr.TypeJSON})
	mustCreate(t, dst, "other-value", sr.Schema{Schema: `"long"`})

	mustCreate(t, src, "zip.json", sr.Schema{Schema: `{"type":"string"}`, Type: sr.TypeJSON})
	mustCreate(t, src, "address.json", sr.Schema{Schema: `{"type":"object","properties":{"zip":{"$ref":"zip.json"}}}`, Type: sr.TypeJSON,
		References: []sr.SchemaReference{{Name: "zip.json", Subject: "zip.json", Version: 1}}})
	person := mustCreate(t, src, "people-value", sr.Schema{Schema: `{"type":"object","properties":{"home":{"$ref":"address.json"}}}`, Type: sr.TypeJSON,
		References: []sr.SchemaReference{{Name: "address.json", Subject: "address.json", Version: 1}}})
	mustCreate(t, src, "ex/address.proto", sr.Schema{Schema: `syntax = "proto3"; package ex; message Address { string city = 1; }`, Type: sr.TypeProtobuf})
	page := mustCreate(t, src, "pages-value", sr.Schema{Schema: `syntax = "proto3"; package ex; import "ex/address.proto"; message Page { ex.Address a = 1; }`,
		Type: sr.TypeProtobuf, References: []sr.SchemaReference{{Name: "ex/address.proto", Subject: "ex/address.proto", Version: 1}}})

	m := newSchemaMap(src, dst, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, c := range []struct {
		topic string
		id    int
		refs  []sr.SchemaReference
	}{
		{"people", person.ID, []sr.SchemaReference{{Name: "address.json", Subject: "address.json", Version: 1}}},
		{"pages", page.ID, []sr.SchemaReference{{Name: "ex/address.proto", Subject: "ex/address.proto", Version: 1}}},
	} {
		body := []byte{0, 2, 4} // a Protobuf envelope's message indexes ride in the body, unchanged
		out, err := m.rewrite(ctx, c.topic, append(schema.AppendEnvelope(nil, c.id), body...))
		if err != nil {
			t.Fatalf("%s: %v", c.topic, err)
		}
		id, gotBody, err := schema.DecodeEnvelope(out)
		if err != nil || string(gotBody) != string(body) {
			t.Fatalf("%s: rewritten to %x (%v)", c.topic, out, err)
		}
		s, err := dst.SchemaByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.References) != 1 || s.References[0] != c.refs[0] {
			t.Errorf("%s: target id %d has references %+v, want %+v", c.topic, id, s.References, c.refs)
		}
	}
	got, err := dst.SchemaByVersion(ctx, "zip.json", 2)
	if err != nil || got.Schema.Schema != `{"type":"string"}` {
		t.Fatalf("zip.json version 2 in the target: %+v, %v", got, err)
	}
	addr, err := dst.SchemaByVersion(ctx, "address.json", 1)
	if err != nil || len(addr.References) != 1 || addr.References[0].Version != 2 {
		t.Fatalf("address.json in the target refers to %+v (%v); want zip.json version 2", addr.References, err)
	}
}

func mustCreate(t *testing.T, cl *sr.Client, subject string, s sr.Schema) sr.SubjectSchema {
	t.Helper()
	ss, err := cl.CreateSchema(context.Background(), subject, s)
	if err != nil {
		t.Fatalf("register %s: %v", subject, err)
	}
	return ss
}
