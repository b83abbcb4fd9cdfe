package schema

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hamba/avro/v2"
	"github.com/linkedin/goavro/v2"
	"github.com/tributary-io/tributary/schema/internal/avsc"
	"github.com/tributary-io/tributary/schema/internal/transcode"
	"github.com/twmb/franz-go/pkg/sr"
)

// DefaultMaxValueBytes bounds what one string, bytes or array in a value may
// claim to hold. A garbage length prefix would otherwise make the decoder
// allocate whatever it says before noticing the data is not there.
const DefaultMaxValueBytes = 16 << 20

// DeserializerConfig configures a Deserializer.
type DeserializerConfig struct {
	// ReaderSchema, when set, is the schema every value is returned in:
	// values written with an older or newer compatible schema are resolved
	// to it by the Avro specification's rules (new fields get their
	// defaults, removed fields are dropped, int widens to long, ...).
	// Empty: each value comes back in the schema it was written with.
	//
	// Resolution to maps costs about three decodes (hamba resolves, then
	// the value is re-encoded and decoded by goavro to get its native
	// form); DeserializeInto a struct costs one. A union with two branches
	// of the same Go type (string and uuid, date and timestamp-millis) may
	// come back under the first of them.
	ReaderSchema string
	// MaxValueBytes bounds the length a string, bytes or array may claim.
	// Default: DefaultMaxValueBytes.
	MaxValueBytes int
}

// Deserializer decodes envelopes. It is safe for concurrent use.
type Deserializer struct {
	reg    Registry
	reader *avsc.Schema // nil: decode in the writer schema
	api    avro.API

	mu      sync.RWMutex
	writers map[int]*writer  // schema id → writer schema, filled on first use
	foreign map[int]*foreign // Protobuf and JSON schema ids (foreign.go)

	readers sync.Pool // *avro.Reader: each holds a 1 KiB slab for short strings
}

// writer is a writer schema and, when the reader schema differs from it,
// how to resolve one to the other.
type writer struct {
	*avsc.Schema
	resolved avro.Schema // hamba's writer→reader plan; nil if not needed
	walk     *walkPlan   // for checkLengths

	// Derived from a Protobuf or JSON schema (foreign.go): which, and how
	// a body converts. Both nil for Avro.
	ref   Writer
	proto *transcode.Proto
	json  *transcode.JSON
}

// NewDeserializer returns a Deserializer that fetches writer schemas through
// reg.
func NewDeserializer(reg Registry, cfg DeserializerConfig) (*Deserializer, error) {
	if reg == nil {
		return nil, errors.New("schema: NewDeserializer needs a registry client")
	}
	max := cfg.MaxValueBytes
	if max <= 0 {
		max = DefaultMaxValueBytes
	}
	d := &Deserializer{
		reg: reg,
		// One hamba API per Deserializer: its decoder cache is keyed by
		// fingerprints that ignore defaults, so it must never see two
		// reader schemas that differ only there.
		api:     avro.Config{MaxByteSliceSize: max, MaxSliceAllocSize: max}.Freeze(),
		writers: make(map[int]*writer),
		foreign: make(map[int]*foreign),
	}
	if cfg.ReaderSchema != "" {
		r, err := avsc.Parse(cfg.ReaderSchema)
		if err != nil {
			return nil, fmt.Errorf("schema: reader schema: %w", err)
		}
		d.reader = r
	}
	return d, nil
}

// Deserialize decodes an envelope into goavro's native form: records as
// map[string]any, unions as nil or map[string]any{"type": value}, enums as
// string, fixed as []byte, arrays as []any, maps as map[string]any,
// timestamp-millis and date as time.Time, decimal as *big.Rat, uuid as
// string. This is the form Serializer accepts, so values round-trip.
//
// A Protobuf or JSON Schema record comes back as the value of the Avro
// schema derived from its writer schema (foreign.go).
func (d *Deserializer) Deserialize(ctx context.Context, b []byte) (any, error) {
	id, body, err := DecodeEnvelope(b)
	if err != nil {
		return nil, err
	}
	w, body, err := d.avroBody(ctx, id, body)
	if err != nil {
		return nil, err
	}
	return d.decode(w, id, body)
}

// DeserializeAvro is Deserialize of a body AvroBody returned, with its
// writer: a converted record is not converted again.
func (d *Deserializer) DeserializeAvro(ctx context.Context, wr Writer, body []byte) (any, error) {
	w, f, err := d.schemaOf(ctx, wr.ID)
	if err != nil {
		return nil, err
	}
	if f != nil {
		if w, err = f.byName(wr.Message); err != nil {
			return nil, err
		}
	}
	return d.decode(w, wr.ID, body)
}

func (d *Deserializer) decode(w *writer, id int, body []byte) (any, error) {
	if w.resolved == nil {
		if err := checkLengths(w.walk, body); err != nil {
			return nil, fmt.Errorf("schema id %d: %w", id, err)
		}
		codec := w.Codec
		if d.reader != nil {
			codec = d.reader.Codec // same schema; return the reader's names
		}
		return decodeExact(codec, id, body)
	}
	v, err := d.decodeResolved(w, id, body)
	if err != nil {
		return nil, err
	}
	// hamba's generic values keep union branches only where the Go type
	// does not say them; re-encoding under the reader schema and decoding
	// with goavro gives the same native form as the unresolved path.
	bin, err := d.api.Marshal(d.reader.Avro, v)
	if err != nil {
		return nil, fmt.Errorf("schema: schema id %d resolved to the reader schema but did not re-encode: %w", id, err)
	}
	return decodeExact(d.reader.Codec, id, bin)
}

// DeserializeInto decodes an envelope into v, a pointer to a struct with
// hamba/avro `avro` tags (or to any type hamba/avro decodes into),
// resolving to the reader schema when one is configured.
func (d *Deserializer) DeserializeInto(ctx context.Context, b []byte, v any) error {
	id, body, err := DecodeEnvelope(b)
	if err != nil {
		return err
	}
	w, body, err := d.avroBody(ctx, id, body)
	if err != nil {
		return err
	}
	s := w.Avro
	if w.resolved != nil {
		s = w.resolved
	} else if d.reader != nil {
		s = d.reader.Avro
	}
	return d.read(s, id, body, v)
}

// WriterSchema returns the text of the Avro schema registered under id
// (of a Protobuf or JSON schema, the Avro schema derived from it; of a
// Protobuf schema, that of its root message: the first top-level message
// no other has a field of), from the cache after the first call. The
// loader groups files by it.
func (d *Deserializer) WriterSchema(ctx context.Context, id int) (string, error) {
	return d.WriterSchemaOf(ctx, Writer{ID: id})
}

// WriterSchemaOf is WriterSchema of a Writer AvroBody returned.
func (d *Deserializer) WriterSchemaOf(ctx context.Context, wr Writer) (string, error) {
	w, f, err := d.schemaOf(ctx, wr.ID)
	if err != nil {
		return "", err
	}
	if f != nil {
		if w, err = f.byName(wr.Message); err != nil {
			return "", err
		}
	} else if wr.Message != "" {
		return "", fmt.Errorf("%w: schema id %d is an Avro schema, which has no message %s", ErrUnsupportedSchema, wr.ID, wr.Message)
	}
	return w.Text, nil
}

// TableWriter is WriterSchema, also naming the Writer: for a Protobuf
// schema, its root message, whose records a table of the schema holds.
func (d *Deserializer) TableWriter(ctx context.Context, id int) (Writer, string, error) {
	w, f, err := d.schemaOf(ctx, id)
	if err != nil {
		return Writer{}, "", err
	}
	if f != nil {
		if w, err = f.byName(""); err != nil {
			return Writer{}, "", err
		}
	}
	return w.ref, w.Text, nil
}

// AvroBody returns which writer schema a record's body (after the
// envelope's 5 bytes) is of, and the body in Avro under it: an Avro body
// as it is (aliasing body, not checked), a Protobuf or JSON one converted
// and so checked whole. Its errors are DecodeEnvelope's, ErrBadBody for
// a body that does not decode, ErrUnsupportedSchema for a schema that
// has no Avro form, or the registry's.
func (d *Deserializer) AvroBody(ctx context.Context, id int, body []byte) (Writer, []byte, error) {
	w, out, err := d.avroBody(ctx, id, body)
	if err != nil {
		return Writer{}, nil, err
	}
	return w.ref, out, nil
}

func (d *Deserializer) avroBody(ctx context.Context, id int, body []byte) (*writer, []byte, error) {
	w, f, err := d.schemaOf(ctx, id)
	if err != nil || f == nil {
		return w, body, err
	}
	return f.avroBody(body)
}

func (d *Deserializer) decodeResolved(w *writer, id int, body []byte) (any, error) {
	var v any
	if err := d.read(w.resolved, id, body, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// read decodes exactly body into v with hamba. Its Unmarshal treats running
// out of input at a value boundary as success and ignores what is left, so
// the reader is driven by hand to report both.
func (d *Deserializer) read(s avro.Schema, id int, body []byte, v any) error {
	r, _ := d.readers.Get().(*avro.Reader)
	if r == nil {
		r = avro.NewReader(nil, 0, avro.WithReaderConfig(d.api))
	}
	defer func() {
		r.Reset(nil)
		d.readers.Put(r)
	}()
	r.Reset(body)
	r.Error = nil
	r.ReadVal(s, v)
	if r.Error != nil {
		return fmt.Errorf("%w: schema id %d: %v", ErrBadBody, id, r.Error)
	}
	r.Peek()
	if r.Error == nil {
		return fmt.Errorf("%w: schema id %d: bytes left over after the value", ErrBadBody, id)
	}
	return nil
}

// decodeExact decodes body with codec and insists that all of it is used.
func decodeExact(codec *goavro.Codec, id int, body []byte) (any, error) {
	v, rest, err := codec.NativeFromBinary(body)
	if err != nil {
		return nil, fmt.Errorf("%w: schema id %d: %v", ErrBadBody, id, err)
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("%w: schema id %d: %d bytes left over after the value", ErrBadBody, id, len(rest))
	}
	return v, nil
}

// schemaOf returns the writer schema for id, fetching and preparing it
// once: an Avro one, or a Protobuf or JSON one to derive writers from.
// Concurrent first uses of one id may both fetch it; the registry answers
// the same and one result wins, which is cheaper than coordinating.
func (d *Deserializer) schemaOf(ctx context.Context, id int) (*writer, *foreign, error) {
	d.mu.RLock()
	w, ok := d.writers[id]
	f := d.foreign[id]
	d.mu.RUnlock()
	if ok || f != nil {
		return w, f, nil
	}
	s, err := d.reg.SchemaByID(ctx, id)
	if err != nil {
		if isNotFound(err) {
			return nil, nil, fmt.Errorf("%w: %d: %v", ErrUnknownID, id, err)
		}
		return nil, nil, fmt.Errorf("schema: fetch writer schema id %d: %w", id, err)
	}
	if s.Type != sr.TypeAvro {
		if f, err = compileForeign(ctx, d.reg, id, s, d.prepare); err != nil {
			if !errors.Is(err, ErrUnsupportedSchema) {
				return nil, nil, err
			}
			f = &foreign{id: id, typ: s.Type, err: err}
		}
		d.mu.Lock()
		d.foreign[id] = f
		d.mu.Unlock()
		return nil, f, nil
	}
	w, err = d.avroWriter(ctx, id, s)
	return w, nil, err
}

// avroWriter prepares Avro writer schema s.
func (d *Deserializer) avroWriter(ctx context.Context, id int, s sr.Schema) (*writer, error) {
	var err error
	var p *avsc.Schema
	if len(s.References) > 0 {
		p, err = resolveReferences(ctx, d.reg, id, s) // references.go
	} else if p, err = avsc.Parse(s.Schema); err != nil {
		err = fmt.Errorf("schema: writer schema id %d: %w", id, err)
	}
	if err != nil {
		return nil, err
	}
	w := &writer{Schema: p, walk: compileWalk(p.Avro), ref: Writer{ID: id}}
	if err := d.prepare(w); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.writers[id] = w
	d.mu.Unlock()
	return w, nil
}

// prepare plans the resolution of w to the reader schema, if any.
func (d *Deserializer) prepare(w *writer) error {
	if d.reader != nil && d.reader.Key != w.Key {
		var err error
		if w.resolved, err = avro.NewSchemaCompatibility().Resolve(d.reader.Avro, w.Avro); err != nil {
			return fmt.Errorf("schema: data written with %s cannot be read with the reader schema: %w", w.ref, err)
		}
	}
	return nil
}
