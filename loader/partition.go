package loader

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tributary-io/tributary/internal/recordbatch"
	"github.com/tributary-io/tributary/loader/warehouse"
	"github.com/tributary-io/tributary/schema"
)

// maxOpenFiles bounds the files one partition keeps open at once (one per
// hour and writer schema); a backfill spanning many hours closes the least
// recently used instead of holding hundreds of HDFS write pipelines.
const maxOpenFiles = 24

// partWriter checks one partition's records and copies their Avro bodies
// into files under the run's directory. It runs in its own goroutine;
// records arrive in offset order.
type partWriter struct {
	r     *run
	topic string
	part  int32

	open  map[fileKey]*openFile
	cur   *openFile // the file of the last record: most often the next's
	files []FileEntry
	errs  *errorWriter
	seq   int
	clock int64 // use counter, for closing the least recently used file

	records, bytes, errCount, noHeader int64
	lastTime                           int64 // header time (ms) of the last record written
	hours                              map[string]bool
	audit                              *auditCounts // nil unless the run counts for the audit
	readAt                             int64        // epoch ms the current chunk was taken up

	layout   *schema.HeaderLayout // of the writer schema layoutID
	layoutID int
}

type fileKey struct {
	hour   int64 // unix hours
	schema int
	msg    string // of a Protobuf schema, the message (schema.Writer)
}

type openFile struct {
	key         fileKey
	w           *ocfWriter   // Avro files
	pq          *parquetFile // Parquet files
	tmp         string
	first, last int64
	used        int64
}

func newPartWriter(r *run, topic string, part int32) *partWriter {
	p := &partWriter{r: r, topic: topic, part: part, open: map[fileKey]*openFile{}, hours: map[string]bool{}}
	if r.cfg.Audit != nil {
		p.audit = newAuditCounts()
	}
	return p
}

// run consumes batches until in is closed, then completes every file.
func (p *partWriter) run(ctx context.Context, in <-chan *chunk) error {
	for c := range in {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		// The loader's latency is measured when it reads an event:
		// once per chunk, not per record.
		p.readAt = p.r.cfg.Now().UnixMilli()
		for i := range c.recs {
			if err := p.add(ctx, &c.recs[i]); err != nil {
				return err
			}
		}
		c.release()
		if err := p.r.hook(FaultMidWrite); err != nil {
			return err
		}
	}
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return p.closeAll()
}

// isBadRecord tells a record that cannot be decoded (it goes to _errors)
// from a failure of the run itself (registry unreachable, cancelled).
func isBadRecord(err error) bool {
	return errors.Is(err, schema.ErrWrongMagic) || errors.Is(err, schema.ErrTruncated) ||
		errors.Is(err, schema.ErrUnknownID) || errors.Is(err, schema.ErrBadBody) ||
		errors.Is(err, schema.ErrUnsupportedSchema) // a schema without an Avro form: to _errors, the reason named
}

// readRecord checks a record's value and reads its header time and
// server, by the rule every tier shares (schema.HeaderLayout), so the hour
// a record is filed under and the window the warehouse tier counts it in
// are those the producer counted it in.
//
// An Avro record is not decoded: the envelope gives the writer schema, and
// the layout's CheckRead (or CheckTime) walks the body by its encodings
// once, to make sure it is one whole value of that schema (a record that
// is not goes to _errors, as a decoder would have refused it) and to read
// the few header fields on the way. The body is then copied as it is into
// a file of the same writer schema, which is what lets a load keep up with
// the fetch. A Protobuf or JSON Schema record is converted to Avro under
// the schema derived from its own (schema.Deserializer.AvroBody), and that
// body is what is checked and filed.
//
// ok is false when the event has no usable time. err is a bad record's
// (see isBadRecord) or the registry's.
func (p *partWriter) readRecord(ctx context.Context, value []byte) (w schema.Writer, body []byte, ms int64, server string, ok bool, err error) {
	r := p.r
	id, body, err := schema.DecodeEnvelope(value)
	if err != nil {
		return w, nil, 0, "", false, err
	}
	w = schema.Writer{ID: id}
	// A partition's records are almost all of one writer schema: the
	// layout of the last is kept, sparing the shared cache's lock.
	l := p.layout
	if l == nil || id != p.layoutID || l.Derived() {
		if l, w, body, err = r.headers.Body(ctx, id, body); err != nil {
			return w, nil, 0, "", false, err
		}
		p.layout, p.layoutID = l, id
	}
	if r.cfg.Audit != nil {
		ms, server, err = l.CheckRead(body)
	} else {
		ms, err = l.CheckTime(body) // the server is for the audit only
	}
	if errors.Is(err, schema.ErrBadBody) {
		return w, nil, 0, "", false, fmt.Errorf("%s: %w", w, err)
	}
	return w, body, ms, server, err == nil, nil
}

func (p *partWriter) add(ctx context.Context, rec *recordbatch.Record) error {
	w, body, ms, server, ok, err := p.readRecord(ctx, rec.Value)
	if err != nil {
		if !isBadRecord(err) {
			return fmt.Errorf("%s/%d offset %d: %w", p.topic, p.part, rec.Offset, err)
		}
		return p.reject(rec, err)
	}
	var native any
	var tf *tableFile // the schema of the record's Parquet file
	if p.r.tables != nil {
		if native, tf, err = p.r.tables.decode(ctx, p.topic, w, body); err != nil {
			if !isBadRecord(err) {
				return fmt.Errorf("%s/%d offset %d: %w", p.topic, p.part, rec.Offset, err)
			}
			return p.reject(rec, err)
		}
		w = tf.w
	}
	if !ok {
		ms = rec.Timestamp
		p.noHeader++
	}
	if p.r.cfg.Table != "" {
		rv, isMap := native.(map[string]any)
		if !isMap {
			return p.reject(rec, fmt.Errorf("%w: not a record", schema.ErrBadBody))
		}
		rv[eventTimeColumn] = ms
	}
	key := fileKey{hour: floorDiv(ms, 3600_000), schema: w.ID, msg: w.Message}
	f := p.cur
	if f == nil || f.key != key {
		if f = p.open[key]; f == nil {
			if f, err = p.openFile(ctx, key, rec.Offset, tf); err != nil {
				return err
			}
		}
		p.cur = f
	}
	if f.pq != nil {
		if err := f.pq.Append(native, len(body)); err != nil {
			if isBadRecord(err) {
				return p.reject(rec, err)
			}
			return fmt.Errorf("writing %s: %w", f.tmp, err)
		}
	} else if err := f.w.Append(body); err != nil {
		return fmt.Errorf("writing %s: %w", f.tmp, err)
	}
	p.clock++
	f.used, f.last = p.clock, rec.Offset
	p.records++
	p.lastTime = ms
	if p.audit != nil {
		if ok {
			w := p.window(ms)
			p.audit.events[auditKey{window: w, server: server}]++
			p.audit.addLatency(w, time.Duration(p.readAt-ms)*time.Millisecond)
		} else {
			p.audit.noTime[p.window(ms)]++
		}
	}
	if f.records() >= p.r.cfg.FileMaxRecords || f.size() >= p.r.cfg.FileMaxBytes {
		return p.closeFile(f)
	}
	return nil
}

// window returns the start of the audit window holding ms.
func (p *partWriter) window(ms int64) int64 {
	w := p.r.cfg.Audit.Window.Milliseconds()
	return floorDiv(ms, w) * w
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func (p *partWriter) openFile(ctx context.Context, key fileKey, first int64, tf *tableFile) (*openFile, error) {
	if len(p.open) >= maxOpenFiles {
		var lru *openFile
		for _, f := range p.open {
			if lru == nil || f.used < lru.used {
				lru = f
			}
		}
		if err := p.closeFile(lru); err != nil {
			return nil, err
		}
	}
	text, err := p.r.deser.WriterSchemaOf(ctx, schema.Writer{ID: key.schema, Message: key.msg})
	if err != nil {
		return nil, fmt.Errorf("%s/%d offset %d: %w", p.topic, p.part, first, err)
	}
	p.seq++
	tmp := path.Join(runDir(p.r.id), "data", fmt.Sprintf("%s.p%d.%06d.%s", p.topic, p.part, p.seq, p.r.cfg.Format))
	out, err := p.r.batch.Create(tmp)
	if err != nil {
		return nil, fmt.Errorf("creating %s in %s: %w", tmp, p.r.w, err)
	}
	meta := map[string]string{
		"tributary.topic":     p.topic,
		"tributary.partition": strconv.Itoa(int(p.part)),
		"tributary.schema.id": strconv.Itoa(key.schema),
	}
	if key.msg != "" {
		meta["tributary.schema.message"] = key.msg
	}
	f := &openFile{key: key, tmp: tmp, first: first}
	if tf != nil {
		f.pq = newParquetFile(out, tf, p.r.cfg.Codec, meta)
	} else if f.w, err = newOCF(out, text, p.r.cfg.Codec, p.r.cfg.DeflateLevel, meta); err != nil {
		out.Close()
		return nil, err
	}
	p.open[key] = f
	return f, nil
}

func (p *partWriter) closeFile(f *openFile) error {
	delete(p.open, f.key)
	if p.cur == f {
		p.cur = nil
	}
	if err := f.close(); err != nil {
		return fmt.Errorf("completing %s in %s: %w", f.tmp, p.r.w, err)
	}
	p.filed(f)
	return nil
}

// filed records a completed file for the manifest.
func (p *partWriter) filed(f *openFile) {
	hour := time.Unix(f.key.hour*3600, 0)
	dir, name := warehouse.HourDir(p.topic, hour), warehouse.DataFileName(p.topic, p.part, f.first, f.last, f.key.schema)
	if f.pq != nil {
		dir, name = warehouse.PartitionDir(p.topic, hour), warehouse.ParquetFileName(p.topic, p.part, f.first, f.last, f.key.schema)
	}
	if p.r.cfg.Table != "" {
		// The run in the name: the files of a discarded run that reached
		// the table never share a name with those of the run that loads
		// the same offsets again.
		dir, name = tableHour(p.r.tableDir(p.topic), hour), strings.TrimSuffix(name, ".parquet")+"."+p.r.id+".parquet"
	}
	p.hours[dir] = true
	p.bytes += f.size()
	p.files = append(p.files, FileEntry{
		Tmp: f.tmp, Final: path.Join(dir, name),
		Topic: p.topic, Partition: p.part, First: f.first, Last: f.last,
		Records: f.records(), Bytes: f.size(), SchemaID: f.key.schema, Kind: "data",
	})
}

func (f *openFile) records() int64 {
	if f.pq != nil {
		return f.pq.records
	}
	return f.w.records
}

func (f *openFile) size() int64 {
	if f.pq != nil {
		return f.pq.Size()
	}
	return f.w.Size()
}

func (f *openFile) close() error {
	if f.pq != nil {
		return f.pq.Close()
	}
	return f.w.Close()
}

// parallelCloses bounds the files a partition completes at once at its
// end.
const parallelCloses = 8

func (p *partWriter) closeAll() error {
	// Each Close waits for its fsync: the files at the end of a run
	// (one per hour and schema) are completed side by side, so that the
	// run waits for about one fsync instead of one per file.
	var g errgroup.Group
	g.SetLimit(parallelCloses)
	for _, f := range p.open {
		g.Go(func() error {
			if err := f.close(); err != nil {
				return fmt.Errorf("completing %s in %s: %w", f.tmp, p.r.w, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	keys := make([]fileKey, 0, len(p.open))
	for k := range p.open {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b fileKey) int {
		return cmp.Or(cmp.Compare(a.hour, b.hour), cmp.Compare(a.schema, b.schema), cmp.Compare(a.msg, b.msg))
	})
	for _, k := range keys {
		p.filed(p.open[k])
		delete(p.open, k)
	}
	p.cur = nil
	if p.errs != nil {
		e, err := p.errs.close()
		if err != nil {
			return err
		}
		p.files = append(p.files, e)
	}
	return nil
}

// abandon closes open files without completing them, after a failure.
func (p *partWriter) abandon() {
	for _, f := range p.open {
		if f.pq != nil {
			f.pq.abandon()
		} else {
			f.w.abandon()
		}
	}
	if p.errs != nil {
		p.errs.f.Close()
	}
}

// reject writes an undecodable record to the partition's error file and
// fails the run once the run's error budget is spent.
func (p *partWriter) reject(rec *recordbatch.Record, cause error) error {
	if p.errs == nil {
		tmp := path.Join(runDir(p.r.id), "errors", fmt.Sprintf("%s.p%d.jsonl", p.topic, p.part))
		f, err := p.r.batch.Create(tmp)
		if err != nil {
			return fmt.Errorf("creating %s in %s: %w", tmp, p.r.w, err)
		}
		p.errs = &errorWriter{f: f, w: bufio.NewWriter(f), tmp: tmp, topic: p.topic, part: p.part, first: rec.Offset, started: p.r.started}
	}
	if err := p.errs.add(rec, cause); err != nil {
		return err
	}
	p.errCount++
	if p.audit != nil {
		p.audit.malformed[p.window(rec.Timestamp)]++
	}
	n := p.r.errCount.Add(1)
	if max := p.r.cfg.MaxErrors; max >= 0 && n > max {
		return fmt.Errorf("more than %d records could not be decoded (the limit; e.g. %s/%d offset %d: %v)", max, p.topic, p.part, rec.Offset, cause)
	}
	return nil
}

// errorWriter keeps a partition's undecodable records, one JSON object a
// line, with everything needed to inspect or replay them.
type errorWriter struct {
	f           io.WriteCloser
	w           *bufio.Writer
	tmp         string
	topic       string
	part        int32
	first, last int64
	n, size     int64
	started     time.Time
}

type errorRecord struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Timestamp int64  `json:"timestamp"`
	Error     string `json:"error"`
	Key       []byte `json:"key,omitempty"`   // base64
	Value     []byte `json:"value,omitempty"` // base64
}

func (e *errorWriter) add(rec *recordbatch.Record, cause error) error {
	line, _ := json.Marshal(errorRecord{
		Topic: e.topic, Partition: e.part, Offset: rec.Offset,
		Timestamp: rec.Timestamp, Error: cause.Error(), Key: rec.Key, Value: rec.Value,
	})
	line = append(line, '\n')
	if _, err := e.w.Write(line); err != nil {
		return fmt.Errorf("writing %s: %w", e.tmp, err)
	}
	e.last = rec.Offset
	e.n++
	e.size += int64(len(line))
	return nil
}

func (e *errorWriter) close() (FileEntry, error) {
	err := e.w.Flush()
	if cerr := e.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return FileEntry{}, fmt.Errorf("completing %s: %w", e.tmp, err)
	}
	return FileEntry{
		Tmp: e.tmp, Final: warehouse.ErrorFilePath(e.topic, e.part, e.first, e.last, e.started),
		Topic: e.topic, Partition: e.part, First: e.first, Last: e.last,
		Records: e.n, Bytes: e.size, Kind: "errors",
	}, nil
}
