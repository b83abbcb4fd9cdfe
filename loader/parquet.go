package loader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hamba/avro/v2"
	"github.com/parquet-go/parquet-go"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/schema"
)

// Formats of the data files a load writes (Config.Format).
const (
	FormatAvro    = "avro"    // Avro object container files, bodies copied as sent
	FormatParquet = "parquet" // Parquet files, records decoded into columns
)

// Formats lists every Config.Format.
var Formats = []string{FormatAvro, FormatParquet}

// ParquetCodecs are the codecs of Parquet pages; DefaultParquetCodec is
// the default, which Spark, Hive and Trino also write by default.
var ParquetCodecs = []string{"snappy", "zstd", "gzip", "none"}

const DefaultParquetCodec = "snappy"

// parquetRowGroupBytes is how many Avro body bytes a Parquet file gathers
// before it writes a row group. parquet-go keeps a row group in memory
// until then, and a partition may have maxOpenFiles files open, so this
// bounds a backfill's memory (24 × 16 MiB a partition) more than it
// maximises row groups; files still roll at FileMaxBytes.
const parquetRowGroupBytes = 16 << 20

// Why parquet-go/parquet-go (v0.32): pure Go (no cgo, as the rest of the
// binary), maintained (releases through 2026, the successor of
// segmentio/parquet-go), writes the logical types Spark and Iceberg read
// (LIST, MAP, DECIMAL, TIMESTAMP, DATE, UUID) and takes rows of columns
// with explicit levels, so the loader shreds goavro's native values itself
// (parquet_schema.go) instead of going through reflection. apache/arrow-go's
// writer would need every record built into Arrow arrays first: a second
// copy of each row group and a much larger dependency.

// parquetFile writes one Parquet file.
type parquetFile struct {
	out     io.WriteCloser
	n       *countingWriter
	w       *parquet.GenericWriter[any]
	node    *pqNode
	cols    [][]parquet.Value
	row     parquet.Row
	records int64
	pending int64 // body bytes since the last row group
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

func parquetCodec(name string) parquet.WriterOption {
	switch name {
	case "zstd":
		return parquet.Compression(&parquet.Zstd)
	case "gzip":
		return parquet.Compression(&parquet.Gzip)
	case "none":
		return parquet.Compression(&parquet.Uncompressed)
	}
	return parquet.Compression(&parquet.Snappy)
}

func newParquetFile(out io.WriteCloser, ts *tableFile, codec string, meta map[string]string) *parquetFile {
	cw := &countingWriter{w: out}
	opts := []parquet.WriterOption{ts.schema, parquetCodec(codec), parquet.CreatedBy("tributary", "", ""),
		// parquet-avro's key: Avro-aware readers (Spark, Hive) take names and
		// logical types from it.
		parquet.KeyValueMetadata("parquet.avro.schema", ts.text)}
	for k, v := range meta {
		opts = append(opts, parquet.KeyValueMetadata(k, v))
	}
	return &parquetFile{out: out, n: cw, w: parquet.NewGenericWriter[any](cw, opts...), node: ts.node,
		cols: make([][]parquet.Value, ts.node.last+1)}
}

// Append writes one record in goavro's native form. A value that does not
// fit the file's schema is a bad record (schema.ErrBadBody): nothing of it
// is written.
func (f *parquetFile) Append(v any, bodyLen int) error {
	for i := range f.cols {
		f.cols[i] = f.cols[i][:0]
	}
	if err := f.node.shred(v, 0, 0, f.cols); err != nil {
		return fmt.Errorf("%w: to Parquet: %v", schema.ErrBadBody, err)
	}
	f.row = f.row[:0]
	for _, c := range f.cols {
		f.row = append(f.row, c...)
	}
	if _, err := f.w.WriteRows([]parquet.Row{f.row}); err != nil {
		return err
	}
	f.records++
	f.pending += int64(bodyLen)
	if f.pending >= parquetRowGroupBytes {
		f.pending = 0
		return f.w.Flush()
	}
	return nil
}

// Size is the bytes written and, roughly, those still in the open row
// group.
func (f *parquetFile) Size() int64 { return f.n.n + f.pending }

func (f *parquetFile) Close() error {
	err := f.w.Close()
	f.pending = 0
	if cerr := f.out.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *parquetFile) abandon() { f.out.Close() }

// Table schemas. A topic's Parquet files are all written in one schema,
// the table's: the latest version registered under the topic's subject
// (<topic>-value) when the run first needs it (of a Protobuf or JSON
// schema, the Avro schema derived from it; of a Protobuf schema, the one
// of its root message, see schema.Deserializer.TableWriter). Records
// written with an older (or newer) writer schema are resolved to it by
// Avro's rules (a field added with a default gets its default, a removed
// one is dropped), so every file of a run has every column a reader
// expects. A writer schema the table schema cannot read, a Protobuf
// record of another message, or a topic whose subject is not registered
// (another subject name strategy), keeps its own writer schema: its
// records go to files of their own, never refused, and the schema id in
// the file name says which. An Iceberg table holds one schema: there,
// a Protobuf record of another message is refused (to _errors), and a
// writer the table cannot read fails the run.

// tableFile is a schema files are written in.
type tableFile struct {
	w      schema.Writer
	text   string
	schema *parquet.Schema
	node   *pqNode
}

type topicTable struct {
	latest  int                  // the table schema's id; 0: none
	message string               // of a Protobuf table schema, its message
	text    string               // the table schema (Avro)
	deser   *schema.Deserializer // resolves to latest
	fits    map[schema.Writer]bool
	files   map[schema.Writer]*tableFile
	// ice and iceLast are latest as an Iceberg table's schema and its last
	// column id (Config.Table only).
	ice     []iceField
	iceLast int
}

type tables struct {
	r  *run
	mu sync.Mutex
	by map[string]*topicTable
}

type subjectVersions interface {
	SchemaByVersion(ctx context.Context, subject string, version int) (sr.SubjectSchema, error)
}

// decode returns a record's value, whose Avro body (schema.AvroBody) is
// of writer w, in the schema its file is written in, and that schema.
func (t *tables) decode(ctx context.Context, topic string, w schema.Writer, body []byte) (any, *tableFile, error) {
	tt, err := t.topic(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	fw := w
	deser := t.r.deser
	if tt.latest != 0 {
		if w.Message != tt.message {
			if t.r.cfg.Table != "" {
				return nil, nil, fmt.Errorf("%w: topic %s: the record is a %s; the table holds %s (the root message of schema id %d, the latest of subject %s)",
					schema.ErrUnsupportedSchema, topic, w.Message, tt.message, tt.latest, schema.TopicNameStrategy(topic))
			}
		} else {
			t.mu.Lock()
			fits, ok := tt.fits[w]
			t.mu.Unlock()
			if !ok {
				fits = t.resolves(ctx, tt, topic, w)
			}
			if fits {
				fw, deser = schema.Writer{ID: tt.latest, Message: tt.message}, tt.deser
			} else if t.r.cfg.Table != "" {
				return nil, nil, fmt.Errorf("topic %s: writer %s cannot be read as the table's schema (id %d, the latest of subject %s): an Iceberg table holds one schema; register a compatible version",
					topic, w, tt.latest, schema.TopicNameStrategy(topic))
			}
		}
	}
	f, err := t.file(ctx, tt, fw)
	if err != nil {
		return nil, nil, err
	}
	v, err := deser.DeserializeAvro(ctx, w, body)
	return v, f, err
}

func (t *tables) topic(ctx context.Context, topic string) (*topicTable, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tt := t.by[topic]; tt != nil {
		return tt, nil
	}
	tt := &topicTable{fits: map[schema.Writer]bool{}, files: map[schema.Writer]*tableFile{}}
	if sv, ok := t.r.reg.(subjectVersions); ok {
		ss, err := sv.SchemaByVersion(ctx, schema.TopicNameStrategy(topic), -1)
		if err != nil {
			var re *sr.ResponseError
			if !errors.As(err, &re) || !sr.IsNotFoundError(re.ErrorCode) {
				return nil, fmt.Errorf("table schema of %s (latest of subject %s): %w", topic, schema.TopicNameStrategy(topic), err)
			}
			if t.r.cfg.Table != "" {
				return nil, fmt.Errorf("topic %s: no subject %s in the registry: an Iceberg table takes its schema from the topic's subject", topic, schema.TopicNameStrategy(topic))
			}
			t.r.log.Warn("no subject for the topic: its Parquet files keep each writer schema", "topic", topic, "subject", schema.TopicNameStrategy(topic))
		} else {
			tw, text, err := t.r.deser.TableWriter(ctx, ss.ID)
			if errors.Is(err, schema.ErrUnsupportedSchema) && t.r.cfg.Table == "" {
				// No Avro form (its records are refused anyway): Parquet
				// files keep each writer schema, as without a subject.
				t.r.log.Warn("the latest schema of the topic's subject has no Avro form: its Parquet files keep each writer schema",
					"topic", topic, "schema_id", ss.ID, "reason", err)
				t.by[topic] = tt
				return tt, nil
			}
			if err != nil {
				return nil, fmt.Errorf("table schema of %s (schema id %d, the latest of subject %s): %w", topic, ss.ID, schema.TopicNameStrategy(topic), err)
			}
			d, err := schema.NewDeserializer(t.r.reg, schema.DeserializerConfig{ReaderSchema: text})
			if err != nil {
				return nil, fmt.Errorf("table schema of %s (schema id %d): %w", topic, ss.ID, err)
			}
			tt.latest, tt.message, tt.text, tt.deser = ss.ID, tw.Message, text, d
			if t.r.cfg.Table != "" {
				if tt.ice, tt.iceLast, err = t.r.icebergTableSchema(topic, text); err != nil {
					return nil, fmt.Errorf("topic %s, schema id %d: %w", topic, ss.ID, err)
				}
			}
		}
	} else if t.r.cfg.Table != "" {
		return nil, fmt.Errorf("topic %s: the registry client cannot look up subjects, which an Iceberg table needs", topic)
	}
	t.by[topic] = tt
	return tt, nil
}

// resolves tells whether the table schema reads records of writer w.
func (t *tables) resolves(ctx context.Context, tt *topicTable, topic string, w schema.Writer) bool {
	fits := w.ID == tt.latest
	if !fits {
		wt, err := t.r.deser.WriterSchemaOf(ctx, w)
		if err == nil {
			ws, err1 := avro.ParseWithCache(wt, "", &avro.SchemaCache{})
			rs, err2 := avro.ParseWithCache(tt.text, "", &avro.SchemaCache{})
			if err1 == nil && err2 == nil {
				_, err := avro.NewSchemaCompatibility().Resolve(rs, ws)
				fits = err == nil
			}
		}
		if !fits {
			t.r.log.Warn("the table schema cannot read a writer schema: its records go to files in their own schema",
				"topic", topic, "table_schema_id", tt.latest, "writer", w.String())
		}
	}
	t.mu.Lock()
	tt.fits[w] = fits
	t.mu.Unlock()
	return fits
}

func (t *tables) file(ctx context.Context, tt *topicTable, w schema.Writer) (*tableFile, error) {
	t.mu.Lock()
	f := tt.files[w]
	t.mu.Unlock()
	if f != nil {
		return f, nil
	}
	text, err := t.r.deser.WriterSchemaOf(ctx, w)
	if err != nil {
		return nil, err
	}
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w, err)
	}
	var extend func(*pqNode) error
	if t.r.cfg.Table != "" {
		extend = addEventTime
	}
	ps, node, err := parquetSchemaWith(s, extend)
	if err != nil {
		return nil, fmt.Errorf("%s to Parquet: %w", w, err)
	}
	f = &tableFile{w: w, text: text, schema: ps, node: node}
	t.mu.Lock()
	tt.files[w] = f
	t.mu.Unlock()
	return f, nil
}
