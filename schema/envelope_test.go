package schema_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/tributary-io/tributary/schema"
)

func TestEnvelope(t *testing.T) {
	b := schema.AppendEnvelope([]byte("prefix"), 0x01020304)
	if want := []byte("prefix\x00\x01\x02\x03\x04"); !bytes.Equal(b, want) {
		t.Fatalf("AppendEnvelope = %q, want %q", b, want)
	}
	id, body, err := schema.DecodeEnvelope(append(b[6:], 'x', 'y'))
	if err != nil || id != 0x01020304 || string(body) != "xy" {
		t.Fatalf("DecodeEnvelope = %d %q %v", id, body, err)
	}
	if _, body, err := schema.DecodeEnvelope(b[6:]); err != nil || len(body) != 0 {
		t.Fatalf("header only: %q %v", body, err)
	}
}

// FuzzDecodeEnvelope feeds arbitrary record values to the envelope decoder
// and to deserializers with and without a reader schema: they must never
// panic, must fail only with one of the four errors that say what was
// wrong, and what they accept must encode again.
//
// The seed corpus (testdata/fuzz/FuzzDecodeEnvelope) holds a page view and
// a service call as written by the Serializer, and damaged copies of them.
func FuzzDecodeEnvelope(f *testing.F) {
	pv, pv2, sc := readSchema(f, "pageview.avsc"), readSchema(f, "pageview-v2.avsc"), readSchema(f, "servicecall.avsc")
	reg := newStaticRegistry(pv, sc) // ids 1 and 2
	ctx := context.Background()
	plain, err := schema.NewDeserializer(reg, schema.DeserializerConfig{MaxValueBytes: 1 << 12})
	if err != nil {
		f.Fatal(err)
	}
	evolving, err := schema.NewDeserializer(reg, schema.DeserializerConfig{ReaderSchema: pv2, MaxValueBytes: 1 << 12})
	if err != nil {
		f.Fatal(err)
	}
	encoders := map[string]*schema.Serializer{}
	for _, text := range []string{pv, pv2, sc} {
		if encoders[text], err = schema.NewSerializer(reg, schema.SerializerConfig{Schema: text}); err != nil {
			f.Fatal(err)
		}
	}
	good, err := encoders[pv].Serialize(ctx, "pageviews", pageView(0))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{0, 0, 0, 0, 2})

	known := []error{schema.ErrWrongMagic, schema.ErrTruncated, schema.ErrUnknownID, schema.ErrBadBody}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, body, err := schema.DecodeEnvelope(b)
		if err == nil && (id < 0 || !bytes.Equal(body, b[schema.HeaderSize:])) {
			t.Fatalf("DecodeEnvelope(%x) = %d, %x", b, id, body)
		}
		for _, de := range []*schema.Deserializer{plain, evolving} {
			v, err := de.Deserialize(ctx, b)
			if err != nil {
				if !isOneOf(err, known) {
					// A writer schema the reader cannot resolve is a
					// property of the schemas, not of the bytes.
					if de == evolving && id == 2 {
						continue
					}
					t.Fatalf("Deserialize(%x): unclassified error %v", b, err)
				}
				continue
			}
			text, err := de.WriterSchema(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if de == evolving {
				text = pv2
			}
			if _, err := encoders[text].Serialize(ctx, "again", v); err != nil {
				t.Fatalf("Deserialize(%x) = %v, which does not encode again: %v", b, v, err)
			}
		}
	})
}

func isOneOf(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
