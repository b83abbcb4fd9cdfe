package schema

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tributary-io/tributary/schema/internal/avsc"
	"github.com/tributary-io/tributary/schema/internal/jsschema"
	"github.com/tributary-io/tributary/schema/internal/pbschema"
	"github.com/tributary-io/tributary/schema/internal/transcode"
)

// Protobuf and JSON Schema records are read as Avro. Their writer schema
// (with its references) compiles once to an Avro schema derived from it
// (schema/internal/transcode states the mapping), and each record's body
// is converted to the Avro encoding of its value under that schema, after
// which everything that reads Avro reads it: the header rule,
// Deserialize, the loader's files and tables, the audit's tiers. A
// Protobuf schema defines several messages and a record names its own by
// the message indexes after the id (Confluent's wire format), so a
// Protobuf writer is a schema id and a message: Writer.
//
// A record that does not decode (message indexes past the schema, bytes
// that are not that message, JSON that is not valid or does not match its
// schema) is ErrBadBody, with the reason.

// Writer names the Avro writer schema of a record: a schema id and, for a
// Protobuf schema, the full name of the record's message ("" otherwise;
// for a Protobuf schema, "" is its root message, see rootMessage).
type Writer struct {
	ID      int
	Message string
}

func (w Writer) String() string {
	if w.Message == "" {
		return fmt.Sprintf("schema id %d", w.ID)
	}
	return fmt.Sprintf("schema id %d message %s", w.ID, w.Message)
}

// maxMessageIndexes bounds the message indexes of a Protobuf record: a
// path through nested messages, which the registry bounds by depth.
const maxMessageIndexes = 128

// foreign is a compiled Protobuf or JSON writer schema.
type foreign struct {
	id    int
	typ   sr.SchemaType
	file  protoreflect.FileDescriptor // PROTOBUF
	valid *jsonschema.Schema          // JSON
	json  *writer                     // JSON: its one derived writer

	// err: the schema has no Avro form (ErrUnsupportedSchema). It is kept,
	// so that each record of it is refused without asking the registry
	// again.
	err error

	mu     sync.RWMutex
	msgs   map[protoreflect.FullName]*writer // PROTOBUF: by message
	failed map[protoreflect.FullName]error   // PROTOBUF: messages with no Avro form

	// prepare finishes a derived writer for its Deserializer (the
	// resolution to a reader schema).
	prepare func(*writer) error
}

// compileForeign compiles schema id, of type PROTOBUF or JSON.
func compileForeign(ctx context.Context, reg Registry, id int, s sr.Schema, prepare func(*writer) error) (*foreign, error) {
	var refs []referenced
	if len(s.References) > 0 {
		var err error
		if refs, err = references(ctx, reg, id, s); err != nil {
			return nil, err
		}
	}
	f := &foreign{id: id, typ: s.Type, prepare: prepare}
	switch s.Type {
	case sr.TypeProtobuf:
		deps := make(map[string]string, len(refs))
		for _, r := range refs {
			deps[r.name] = r.text
		}
		fd, err := pbschema.Compile(s.Schema, deps)
		if err != nil {
			return nil, fmt.Errorf("%w: schema id %d (PROTOBUF) does not compile: %v", ErrUnsupportedSchema, id, err)
		}
		if fd.Messages().Len() == 0 {
			return nil, fmt.Errorf("%w: schema id %d (PROTOBUF) defines no message", ErrUnsupportedSchema, id)
		}
		f.file, f.msgs, f.failed = fd, map[protoreflect.FullName]*writer{}, map[protoreflect.FullName]error{}
		return f, nil
	case sr.TypeJSON:
		order := transcode.KeyOrder{}
		doc, err := transcode.DecodeSchema(s.Schema, order)
		if err != nil {
			return nil, fmt.Errorf("%w: schema id %d (JSON) is not JSON: %v", ErrUnsupportedSchema, id, err)
		}
		jrefs := make([]jsschema.Ref, len(refs))
		for i, r := range refs {
			d, err := transcode.DecodeSchema(r.text, order)
			if err != nil {
				return nil, fmt.Errorf("%w: schema id %d (JSON): reference %q is not JSON: %v", ErrUnsupportedSchema, id, r.name, err)
			}
			jrefs[i] = jsschema.Ref{Name: r.name, Doc: d}
		}
		if f.valid, err = jsschema.Compile(doc, jrefs); err != nil {
			return nil, fmt.Errorf("%w: schema id %d (JSON) does not compile: %v", ErrUnsupportedSchema, id, err)
		}
		tj, err := transcode.NewJSON(doc, jrefs, order)
		if err != nil {
			return nil, fmt.Errorf("%w: schema id %d (JSON) has no table form: %v", ErrUnsupportedSchema, id, err)
		}
		w, err := derivedWriter(Writer{ID: id}, tj.Schema())
		if err != nil {
			return nil, err
		}
		w.json = tj
		if err := prepare(w); err != nil {
			return nil, err
		}
		f.json = w
		return f, nil
	}
	return nil, fmt.Errorf("%w: schema id %d is a %s schema", ErrUnsupportedSchema, id, s.Type)
}

func derivedWriter(w Writer, text string) (wr *writer, err error) {
	defer func() {
		// A derived schema is ours and should always parse; if a library
		// ever panics on one, its records are refused, the process goes on.
		if r := recover(); r != nil {
			wr, err = nil, fmt.Errorf("%w: %s: the Avro schema derived from it does not parse: %v", ErrUnsupportedSchema, w, r)
		}
	}()
	p, err := avsc.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: the Avro schema derived from it does not parse: %v", ErrUnsupportedSchema, w, err)
	}
	return &writer{Schema: p, walk: compileWalk(p.Avro), ref: w}, nil
}

// message returns the writer of one message of a Protobuf schema.
func (f *foreign) message(md protoreflect.MessageDescriptor) (*writer, error) {
	// Every record asks: the partitions' writers share the read lock.
	f.mu.RLock()
	w := f.msgs[md.FullName()]
	f.mu.RUnlock()
	if w != nil {
		return w, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if w := f.msgs[md.FullName()]; w != nil {
		return w, nil
	}
	if err := f.failed[md.FullName()]; err != nil {
		return nil, err
	}
	tp, err := transcode.NewProto(md)
	if err != nil {
		err = fmt.Errorf("%w: schema id %d: %v", ErrUnsupportedSchema, f.id, err)
		f.failed[md.FullName()] = err
		return nil, err
	}
	w, err = derivedWriter(Writer{ID: f.id, Message: string(md.FullName())}, tp.Schema())
	if err != nil {
		f.failed[md.FullName()] = err
		return nil, err
	}
	w.proto = tp
	if err := f.prepare(w); err != nil {
		return nil, err
	}
	f.msgs[md.FullName()] = w
	return w, nil
}

// byName returns the writer of the message named name; "" is the root
// message (rootMessage).
func (f *foreign) byName(name string) (*writer, error) {
	if f.err != nil {
		return nil, f.err
	}
	if f.typ != sr.TypeProtobuf {
		if name != "" {
			return nil, fmt.Errorf("%w: schema id %d is a %s schema, which has no message %s", ErrUnsupportedSchema, f.id, f.typ, name)
		}
		return f.json, nil
	}
	md := rootMessage(f.file)
	if name != "" {
		d := findMessage(f.file.Messages(), protoreflect.FullName(name))
		if d == nil {
			return nil, fmt.Errorf("%w: schema id %d defines no message %s", ErrUnsupportedSchema, f.id, name)
		}
		md = d
	}
	return f.message(md)
}

// rootMessage is the message a table of a Protobuf schema holds: the
// first top-level message that no other top-level message has a field
// of, else the first. A file commonly defines the parts of its event
// (a header) before the event itself, which Confluent's "first message"
// would take.
func rootMessage(fd protoreflect.FileDescriptor) protoreflect.MessageDescriptor {
	ms := fd.Messages()
	used := map[protoreflect.FullName]bool{}
	for i := 0; i < ms.Len(); i++ {
		fs := ms.Get(i).Fields()
		for j := 0; j < fs.Len(); j++ {
			if m := fs.Get(j).Message(); m != nil && m.FullName() != ms.Get(i).FullName() {
				used[m.FullName()] = true
			}
		}
	}
	for i := 0; i < ms.Len(); i++ {
		if !used[ms.Get(i).FullName()] {
			return ms.Get(i)
		}
	}
	return ms.Get(0)
}

func findMessage(ms protoreflect.MessageDescriptors, name protoreflect.FullName) protoreflect.MessageDescriptor {
	for i := 0; i < ms.Len(); i++ {
		m := ms.Get(i)
		if m.FullName() == name {
			return m
		}
		if d := findMessage(m.Messages(), name); d != nil {
			return d
		}
	}
	return nil
}

// avroBody returns the writer of a record's body and the body in Avro.
func (f *foreign) avroBody(body []byte) (*writer, []byte, error) {
	if f.err != nil {
		return nil, nil, f.err
	}
	if f.typ == sr.TypeJSON {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err != nil {
			return nil, nil, fmt.Errorf("%w: schema id %d: not JSON: %v", ErrBadBody, f.id, err)
		}
		if err := f.valid.Validate(v); err != nil {
			return nil, nil, fmt.Errorf("%w: schema id %d: the JSON does not match its schema: %v", ErrBadBody, f.id, oneLine(err))
		}
		out, err := f.json.json.Encode(make([]byte, 0, len(body)), v)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: schema id %d: %v", ErrBadBody, f.id, err)
		}
		return f.json, out, nil
	}
	md, rest, err := f.messageAt(body)
	if err != nil {
		return nil, nil, err
	}
	w, err := f.message(md)
	if err != nil {
		return nil, nil, err
	}
	out, err := w.proto.Decode(make([]byte, 0, len(rest)+len(rest)/2), rest)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrBadBody, w.ref, err)
	}
	return w, out, nil
}

// messageAt reads a Protobuf record's message indexes (Confluent's wire
// format: a zigzag varint count, then each index as one; a lone 0 is
// [0]) and returns the message they name and the bytes after them.
func (f *foreign) messageAt(body []byte) (protoreflect.MessageDescriptor, []byte, error) {
	n, k := binary.Varint(body)
	if k <= 0 {
		return nil, nil, fmt.Errorf("%w: schema id %d: the message indexes are cut short", ErrBadBody, f.id)
	}
	body = body[k:]
	if n == 0 {
		return f.file.Messages().Get(0), body, nil
	}
	if n < 0 || n > maxMessageIndexes {
		return nil, nil, fmt.Errorf("%w: schema id %d: %d message indexes (at most %d)", ErrBadBody, f.id, n, maxMessageIndexes)
	}
	ms := f.file.Messages()
	var md protoreflect.MessageDescriptor
	path := make([]int64, 0, n)
	for range n {
		i, k := binary.Varint(body)
		if k <= 0 {
			return nil, nil, fmt.Errorf("%w: schema id %d: the message indexes are cut short", ErrBadBody, f.id)
		}
		body = body[k:]
		path = append(path, i)
		if i < 0 || i >= int64(ms.Len()) {
			where := "the schema defines"
			if md != nil {
				where = fmt.Sprintf("%s nests", md.FullName())
			}
			return nil, nil, fmt.Errorf("%w: schema id %d: message index %v points past the schema (%s %d messages)", ErrBadBody, f.id, path, where, ms.Len())
		}
		md = ms.Get(int(i))
		ms = md.Messages()
	}
	return md, body, nil
}

// oneLine is a validation error's report on one line: the validator
// lists each failing keyword on a line of its own. It is cut at 1 KiB:
// the reason goes into every _errors line, and a large record failing in
// many places would otherwise make a report larger than itself.
func oneLine(err error) string {
	s := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	if len(s) > 1024 {
		s = strings.ToValidUTF8(s[:1024], "") + " ..."
	}
	return s
}
