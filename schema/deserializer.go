package schema

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hamba/avro/v2"
	"github.com/linkedin/goavro/v2"
	"github.com/tributary-io/tributary/schema/internal/avsc"
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
	writers map[int]*writer // schema id → writer schema, filled on first use

	readers sync.Pool // *avro.Reader: each holds a 1 KiB slab for short strings
}

// writer is a writer schema and, when the reader schema differs from it,
// how to resolve one to the other.
type writer struct {
	*avsc.Schema
	resolved avro.Schema // hamba's writer→reader plan; nil if not needed
	walk     *walkPlan   // for checkLengths
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
func (d *Deserializer) Deserialize(ctx context.Context, b []byte) (any, error) {
	id, body, err := DecodeEnvelope(b)
	if err != nil {
		return nil, err
	}
	w, err := d.writer(ctx, id)
	if err != nil {
		return nil, err
	}
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
	w, err := d.writer(ctx, id)
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

// WriterSchema returns the text of the schema registered under id, from
// the cache after the first call. The loader groups files by it.
func (d *Deserializer) WriterSchema(ctx context.Context, id int) (string, error) {
	w, err := d.writer(ctx, id)
	if err != nil {
		return "", err
	}
	return w.Text, nil
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

// writer returns the writer schema for id, fetching and preparing it once.
// Concurrent first uses of one id may both fetch it; the registry answers
// the same and one result wins, which is cheaper than coordinating.
func (d *Deserializer) writer(ctx context.Context, id int) (*writer, error) {
	d.mu.RLock()
	w, ok := d.writers[id]
	d.mu.RUnlock()
	if ok {
		return w, nil
	}
	s, err := d.reg.SchemaByID(ctx, id)
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("%w: %d: %v", ErrUnknownID, id, err)
		}
		return nil, fmt.Errorf("schema: fetch writer schema id %d: %w", id, err)
	}
	if s.Type != sr.TypeAvro {
		// The registry stores JSON and Protobuf schemas too; their records
		// are not Avro, and decoding them as Avro would yield garbage.
		return nil, fmt.Errorf("%w: schema id %d is a %s schema; this deserializer reads Avro records only", ErrUnsupportedSchema, id, s.Type)
	}
	var p *avsc.Schema
	if len(s.References) > 0 {
		p, err = resolveReferences(ctx, d.reg, id, s) // references.go
	} else if p, err = avsc.Parse(s.Schema); err != nil {
		err = fmt.Errorf("schema: writer schema id %d: %w", id, err)
	}
	if err != nil {
		return nil, err
	}
	w = &writer{Schema: p, walk: compileWalk(p.Avro)}
	if d.reader != nil && d.reader.Key != p.Key {
		if w.resolved, err = avro.NewSchemaCompatibility().Resolve(d.reader.Avro, p.Avro); err != nil {
			return nil, fmt.Errorf("schema: data written with schema id %d cannot be read with the reader schema: %w", id, err)
		}
	}
	d.mu.Lock()
	d.writers[id] = w
	d.mu.Unlock()
	return w, nil
}
