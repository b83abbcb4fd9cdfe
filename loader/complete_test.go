package loader_test

import (
	"encoding/json"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// With --audit, an hour's _SUCCESS certifies what the audit says: it is
// written only once the warehouse tier holds every event the producers
// counted in the hour (here 200 of 205 loaded: no marker, though every
// partition is loaded far past the hour; then the last 5: _SUCCESS, whose
// content says what it certifies). A late event after it is loaded into its
// hour and recorded in _LATE-<run>. An hour still short after the maximum
// wait gets _INCOMPLETE with the figures instead, and _SUCCESS in its place
// once the missing events are loaded after all.
func TestHoursCompletedByTheAudit(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "complete", 2)
	env.CreateTopic(t, "short", 2)
	hour := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	dir := warehouse.HourDir("complete", hour)
	schemaText := loadertest.Schema(t, "pageview")
	url := "file://" + t.TempDir()
	w := openWarehouse(t, url)
	cfg := config(env, url, "complete")
	cfg.Audit = &loader.AuditConfig{}

	events := loadertest.PageViews(0, 205, 2, hour, time.Hour)
	publishProducerCounts(t, env, "complete", events)
	env.Produce(t, "complete", schemaText, events[:200])
	sum := run(t, cfg)
	if slices.Contains(sum.Markers, dir) || marker(t, w, dir, "_SUCCESS") != nil || marker(t, w, dir, "_INCOMPLETE") != nil {
		t.Fatalf("200 of the 205 counted events loaded: markers %v; want no _SUCCESS and no _INCOMPLETE yet", sum.Markers)
	}

	env.Produce(t, "complete", schemaText, events[200:])
	sum = run(t, cfg)
	m := marker(t, w, dir, "_SUCCESS")
	if !slices.Contains(sum.Markers, dir) || m == nil || m.By != loader.CompleteByAudit || m.Audit == nil ||
		m.Audit.Produced != 205 || m.Audit.Warehouse != 205 || m.Audit.Missing != 0 || m.Audit.Completeness != 100 || m.Certifies == "" {
		t.Fatalf("every counted event loaded: markers %v, _SUCCESS %+v; want _SUCCESS certifying 205 of 205", sum.Markers, m)
	}
	if m.Audit != nil {
		t.Logf("_SUCCESS: %s (%+v)", m.Certifies, *m.Audit)
	}

	late := loadertest.PageViews(205, 1, 2, hour.Add(30*time.Minute), time.Minute)
	publishProducerCounts(t, env, "complete", late)
	env.Produce(t, "complete", schemaText, late)
	sum = run(t, cfg)
	var lr loader.LateRecord
	if !slices.Equal(sum.Late, []string{dir}) || readJSONFile(t, w, path.Join(dir, "_LATE-"+sum.Run), &lr) != nil || lr.Records != 1 || lr.Run != sum.Run {
		t.Fatalf("a late event after _SUCCESS: summary late %v, _LATE-%s %+v; want 1 record recorded", sum.Late, sum.Run, lr)
	}
	loadertest.CheckExactlyOnce(t, loadertest.Read(t, w), "complete", append(slices.Clone(events), late...))

	// Five events counted and never sent: after the maximum wait, the
	// hour is marked incomplete with the figures.
	short := loadertest.PageViews(1000, 205, 2, hour, time.Hour)
	publishProducerCounts(t, env, "short", short)
	env.Produce(t, "short", schemaText, short[:200])
	cfg = config(env, url, "short")
	cfg.Audit = &loader.AuditConfig{}
	cfg.CompleteMaxWait = time.Hour
	sum = run(t, cfg)
	sdir := warehouse.HourDir("short", hour)
	inc := marker(t, w, sdir, "_INCOMPLETE")
	if !slices.Equal(sum.Incomplete, []string{sdir}) || marker(t, w, sdir, "_SUCCESS") != nil || inc == nil || inc.Audit == nil ||
		inc.Audit.Produced != 205 || inc.Audit.Warehouse != 200 || inc.Audit.Missing != 5 || inc.Audit.Completeness != 97.5609 {
		t.Fatalf("an hour 5 short after the maximum wait: summary incomplete %v, _INCOMPLETE %+v; want 205 produced, 200 in the warehouse, 5 missing, 97.5609 %%", sum.Incomplete, inc)
	}
	t.Logf("_INCOMPLETE: %s", inc.Certifies)

	// The five arrive after all: the hour is judged again, and is complete.
	env.Produce(t, "short", schemaText, short[200:])
	sum = run(t, cfg)
	if m := marker(t, w, sdir, "_SUCCESS"); m == nil || m.Audit == nil || m.Audit.Warehouse != 205 || marker(t, w, sdir, "_INCOMPLETE") != nil ||
		!slices.Contains(sum.Markers, sdir) {
		t.Errorf("the missing events loaded after _INCOMPLETE: _SUCCESS %+v, _INCOMPLETE still there: %v; want _SUCCESS for 205 events instead",
			m, marker(t, w, sdir, "_INCOMPLETE") != nil)
	}
}

// marker reads an hour's marker, nil if it does not exist.
func marker(t *testing.T, w warehouse.FS, dir, name string) *loader.HourMarker {
	t.Helper()
	var m loader.HourMarker
	if err := readJSONFile(t, w, path.Join(dir, name), &m); err != nil {
		return nil
	}
	return &m
}

func readJSONFile(t *testing.T, w warehouse.FS, name string, v any) error {
	t.Helper()
	ok, err := warehouse.Exists(w, name)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return errNotThere
	}
	f, err := w.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := json.NewDecoder(f).Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return nil
}

var errNotThere = &notThere{}

type notThere struct{}

func (*notThere) Error() string { return "not there" }
