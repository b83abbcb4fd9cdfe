package audit

import (
	_ "embed"
	"fmt"
	"time"
)

// MonitoringSchema is the Avro schema of monitoring events
// (tributary.audit.MonitoringEvent), registered under "<topic>-value" of
// the audit topic by the first publisher.
//
//go:embed monitoring.avsc
var MonitoringSchema string

// DefaultTopic is where monitoring events are published.
const DefaultTopic = "_audit"

// Tier names used by Tributary's own parts. Any other name works: a tier is
// whatever a publisher says it counted.
const (
	// TierProducer is the baseline every other tier is compared against.
	TierProducer = "producer"
	// TierLive and TierAnalysis are clusters counted by `tributary audit count`.
	TierLive     = "live"
	TierAnalysis = "analysis"
	// TierMirror counts what the mirror wrote to the analysis cluster.
	TierMirror = "mirror"
	// TierWarehouse counts what the loader committed to the warehouse.
	TierWarehouse = "warehouse"
)

// maxPrevious bounds Event.Previous: a run of more consecutive lost
// monitoring events than this is still detected, but not located.
const maxPrevious = 16

// Event is one monitoring event: what one publisher counted in one window.
// See monitoring.avsc for the meaning of each field.
type Event struct {
	ID        [16]byte  // header.guid
	Published time.Time // header.time
	Host      string    // header.server
	Tier      string
	Source    string
	Publisher string
	Sequence  int64
	Final     bool
	Snapshot  bool
	Window    time.Time
	Size      time.Duration
	Counts    []Count
	NoTime    []TopicCount
	Malformed []TopicCount
	Covers    []string
	Previous  []Prior
	Latency   []LatencyCount
}

// Count is the number of events of one topic and server in a window.
type Count struct {
	Topic  string
	Server string
	N      int64
	// Distinct is how many of the N are distinct events, the rest being
	// duplicates; -1 (or 0 with N > 0) when not known: running counters,
	// events published before the field existed.
	Distinct int64
}

// TopicCount is a number of events of one topic.
type TopicCount struct {
	Topic string
	N     int64
}

// Prior locates an earlier event of the same publisher.
type Prior struct {
	Sequence int64
	Window   time.Time
	Topics   []string
}

// serviceName is header.service of monitoring events.
const serviceName = "tributary-audit"

// native returns e in goavro's native form, ready for schema.Serializer.
func (e *Event) native() map[string]any {
	counts := make([]any, len(e.Counts))
	for i, c := range e.Counts {
		counts[i] = map[string]any{"topic": c.Topic, "server": c.Server, "count": c.N, "distinct": c.Distinct}
	}
	prev := make([]any, len(e.Previous))
	for i, p := range e.Previous {
		prev[i] = map[string]any{"sequence": p.Sequence, "window_start": p.Window, "topics": anyStrings(p.Topics)}
	}
	latency := make([]any, len(e.Latency))
	for i, l := range e.Latency {
		b := make([]any, len(l.Buckets))
		for j, n := range l.Buckets {
			b[j] = n
		}
		latency[i] = map[string]any{"topic": l.Topic, "buckets": b}
	}
	mode := "DELTA"
	if e.Snapshot {
		mode = "SNAPSHOT"
	}
	return map[string]any{
		"header": map[string]any{
			"time":    e.Published,
			"server":  e.Host,
			"service": serviceName,
			"guid":    e.ID[:],
		},
		"tier":         e.Tier,
		"source":       e.Source,
		"publisher":    e.Publisher,
		"sequence":     e.Sequence,
		"final":        e.Final,
		"mode":         mode,
		"window_start": e.Window,
		"window_ms":    e.Size.Milliseconds(),
		"counts":       counts,
		"no_time":      topicCounts(e.NoTime),
		"malformed":    topicCounts(e.Malformed),
		"covers":       anyStrings(e.Covers),
		"previous":     prev,
		"latency":      latency,
	}
}

func topicCounts(tc []TopicCount) []any {
	out := make([]any, len(tc))
	for i, c := range tc {
		out[i] = map[string]any{"topic": c.Topic, "count": c.N}
	}
	return out
}

func anyStrings(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// eventFromNative converts a decoded monitoring event back. Schema
// evolution may add fields; fields it removed would show up here as
// errors naming the field.
func eventFromNative(v any) (*Event, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("monitoring event is a %T, not a record", v)
	}
	d := decoder{m: m}
	h := decoder{m: d.record("header")}
	e := &Event{
		Published: h.time("time"),
		Host:      h.string("server"),
		Tier:      d.string("tier"),
		Source:    d.string("source"),
		Publisher: d.string("publisher"),
		Sequence:  d.long("sequence"),
		Final:     d.bool("final"),
		Snapshot:  d.string("mode") == "SNAPSHOT",
		Window:    d.time("window_start"),
		Size:      time.Duration(d.long("window_ms")) * time.Millisecond,
		Covers:    d.strings("covers"),
	}
	copy(e.ID[:], h.bytes("guid"))
	for _, c := range d.records("counts") {
		cd := decoder{m: c}
		e.Counts = append(e.Counts, Count{Topic: cd.string("topic"), Server: cd.string("server"), N: cd.long("count"), Distinct: cd.optLong("distinct", -1)})
		d.merge(cd.err)
	}
	for _, f := range []struct {
		name string
		dst  *[]TopicCount
	}{{"no_time", &e.NoTime}, {"malformed", &e.Malformed}} {
		for _, c := range d.records(f.name) {
			cd := decoder{m: c}
			*f.dst = append(*f.dst, TopicCount{Topic: cd.string("topic"), N: cd.long("count")})
			d.merge(cd.err)
		}
	}
	for _, p := range d.records("previous") {
		pd := decoder{m: p}
		e.Previous = append(e.Previous, Prior{Sequence: pd.long("sequence"), Window: pd.time("window_start"), Topics: pd.strings("topics")})
		d.merge(pd.err)
	}
	if _, ok := d.m["latency"]; ok { // absent from events written before it existed
		for _, l := range d.records("latency") {
			ld := decoder{m: l}
			lc := LatencyCount{Topic: ld.string("topic")}
			arr, ok := l["buckets"].([]any)
			if !ok || len(arr) > latencyBuckets {
				ld.fail("buckets", l["buckets"], fmt.Sprintf("array of at most %d longs", latencyBuckets))
			}
			for _, x := range arr {
				n, ok := x.(int64)
				if !ok || n < 0 {
					ld.fail("buckets", x, "non-negative long")
					break
				}
				lc.Buckets = append(lc.Buckets, n)
			}
			e.Latency = append(e.Latency, lc)
			d.merge(ld.err)
		}
	}
	d.merge(h.err)
	if d.err != nil {
		return nil, d.err
	}
	if e.Size <= 0 {
		return nil, fmt.Errorf("monitoring event %d of %s: window_ms %d is not positive", e.Sequence, e.Publisher, e.Size.Milliseconds())
	}
	return e, nil
}

// decoder reads fields of a goavro native record, keeping the first error
// so the conversion reads as a list of fields.
type decoder struct {
	m   map[string]any
	err error
}

func (d *decoder) merge(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) fail(name string, v any, want string) {
	d.merge(fmt.Errorf("monitoring event field %q is %T, want %s", name, v, want))
}

func (d *decoder) string(name string) string {
	s, ok := d.m[name].(string)
	if !ok {
		d.fail(name, d.m[name], "string")
	}
	return s
}

func (d *decoder) long(name string) int64 {
	n, ok := d.m[name].(int64)
	if !ok {
		d.fail(name, d.m[name], "long")
	}
	return n
}

// optLong reads a field added to the schema later: events written before
// it lack it (read under their own writer schema) and get def.
func (d *decoder) optLong(name string, def int64) int64 {
	if _, ok := d.m[name]; !ok {
		return def
	}
	return d.long(name)
}

func (d *decoder) bool(name string) bool {
	b, ok := d.m[name].(bool)
	if !ok {
		d.fail(name, d.m[name], "boolean")
	}
	return b
}

func (d *decoder) bytes(name string) []byte {
	b, ok := d.m[name].([]byte)
	if !ok {
		d.fail(name, d.m[name], "bytes")
	}
	return b
}

func (d *decoder) time(name string) time.Time {
	switch t := d.m[name].(type) {
	case time.Time:
		return t.UTC()
	case int64:
		return time.UnixMilli(t).UTC()
	}
	d.fail(name, d.m[name], "timestamp-millis")
	return time.Time{}
}

func (d *decoder) record(name string) map[string]any {
	r, ok := d.m[name].(map[string]any)
	if !ok {
		d.fail(name, d.m[name], "record")
	}
	return r
}

func (d *decoder) records(name string) []map[string]any {
	arr, ok := d.m[name].([]any)
	if !ok {
		d.fail(name, d.m[name], "array")
		return nil
	}
	out := make([]map[string]any, 0, len(arr))
	for _, x := range arr {
		r, ok := x.(map[string]any)
		if !ok {
			d.fail(name, x, "array of records")
			return nil
		}
		out = append(out, r)
	}
	return out
}

func (d *decoder) strings(name string) []string {
	arr, ok := d.m[name].([]any)
	if !ok {
		d.fail(name, d.m[name], "array")
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		s, ok := x.(string)
		if !ok {
			d.fail(name, x, "array of strings")
			return nil
		}
		out = append(out, s)
	}
	return out
}
