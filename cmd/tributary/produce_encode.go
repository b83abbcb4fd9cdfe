package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/schema"
)

// schemaType is the format of --schema: --schema-type when given, else
// PROTOBUF for a .proto file and AVRO for anything else. A JSON Schema
// is never guessed from the name: Avro schemas are often kept in .json
// files too, and a guess would change what existing commands send.
func (f *avroFlags) schemaType() (sr.SchemaType, error) {
	switch strings.ToUpper(f.schemaTypeName) {
	case "":
		if strings.EqualFold(filepath.Ext(f.schema), ".proto") {
			return sr.TypeProtobuf, nil
		}
		return sr.TypeAvro, nil
	case "AVRO":
		return sr.TypeAvro, nil
	case "PROTOBUF":
		return sr.TypeProtobuf, nil
	case "JSON":
		return sr.TypeJSON, nil
	}
	return 0, fmt.Errorf("--schema-type %q: AVRO, PROTOBUF or JSON", f.schemaTypeName)
}

// eventEncoder turns a line of stdin into a record for the audited
// producer: an Avro event for the schema package's Serializer, or an
// envelope a ForeignSerializer wrote.
type eventEncoder struct {
	avro    *schema.JSONEvents
	ser     *schema.Serializer
	foreign *schema.ForeignSerializer
}

func newEventEncoder(reg schema.Registry, typ sr.SchemaType, text string, f avroFlags) (*eventEncoder, error) {
	if f.message != "" && typ != sr.TypeProtobuf {
		return nil, errors.New("--message picks a message of a Protobuf schema")
	}
	if len(f.references) > 0 && typ == sr.TypeAvro {
		return nil, errors.New("--reference is for Protobuf and JSON Schema schemas: an Avro --schema must define its types")
	}
	if typ != sr.TypeAvro {
		refs, err := readReferences(f.references)
		if err != nil {
			return nil, err
		}
		fs, err := schema.NewForeignSerializer(reg, schema.ForeignSerializerConfig{Type: typ, Schema: text, Message: f.message,
			References: refs, Service: f.service, Server: f.server, HeaderField: f.headerField})
		if err != nil && strings.Contains(err.Error(), `import "`) {
			err = fmt.Errorf("%w (give each imported file with --reference IMPORT_PATH=FILE)", err)
		}
		if err != nil {
			return nil, err
		}
		return &eventEncoder{foreign: fs}, nil
	}
	events, err := schema.NewJSONEvents(text, f.headerField)
	if err != nil {
		if looksLikeJSONSchema(text) {
			err = fmt.Errorf("%w (is it a JSON Schema? then say --schema-type JSON)", err)
		}
		return nil, err
	}
	ser, err := schema.NewSerializer(reg, schema.SerializerConfig{Schema: text, Service: f.service, Server: f.server, HeaderField: f.headerField})
	if err != nil {
		return nil, err
	}
	return &eventEncoder{avro: events, ser: ser}, nil
}

// readReferences reads the --reference NAME=FILE files.
func readReferences(flags []string) ([]schema.Reference, error) {
	var out []schema.Reference
	for _, f := range flags {
		name, file, ok := strings.Cut(f, "=")
		if !ok || name == "" || file == "" {
			return nil, fmt.Errorf("--reference %q: want NAME=FILE (NAME: the import path or $ref name)", f)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--reference %s: %w", name, err)
		}
		out = append(out, schema.Reference{Name: name, Schema: string(b)})
	}
	return out, nil
}

// looksLikeJSONSchema tells a JSON Schema that was taken for Avro.
func looksLikeJSONSchema(text string) bool {
	return strings.Contains(text, `"$schema"`) || strings.Contains(text, `"properties"`)
}

func (e *eventEncoder) producer(cl *kgo.Client, pub *audit.Publisher) (*audit.Producer, error) {
	if e.ser != nil {
		return audit.NewProducer(cl, e.ser, pub)
	}
	return audit.NewEnvelopeProducer(cl, pub, e.foreign.HeaderField())
}

// send produces one line, or returns why it is not an event, having
// counted it malformed.
func (e *eventEncoder) send(ctx context.Context, prod *audit.Producer, pub *audit.Publisher, topic string, line []byte, promise func(*kgo.Record, error)) error {
	if e.avro != nil {
		ev, err := e.avro.Decode(line)
		if err != nil {
			pub.Malformed(topic, time.Now())
			return err
		}
		return prod.Produce(ctx, topic, ev, promise) // counts what fails to encode
	}
	v, err := e.foreign.Serialize(ctx, topic, line)
	if err != nil {
		// As audit.Producer.Produce does for Avro: an event that cannot be
		// sent is counted malformed, unless we are stopping.
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			pub.Malformed(topic, time.Now())
		}
		return err
	}
	return prod.ProduceRecord(ctx, &kgo.Record{Topic: topic, Value: v}, promise)
}
