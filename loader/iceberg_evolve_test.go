package loader_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// tableColumns reads the ids the table's current schema gives its
// top-level columns, and its schema count, from the newest version file.
func tableColumns(t *testing.T, tableDir string) (map[string]int, int) {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(tableDir, "metadata", "v*.metadata.json"))
	newest, best := "", 0
	for _, m := range matches {
		var n int
		if _, err := fmtSscan(filepath.Base(m), &n); err == nil && n > best {
			newest, best = m, n
		}
	}
	b, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		CurrentSchemaID int `json:"current-schema-id"`
		Schemas         []struct {
			SchemaID int `json:"schema-id"`
			Fields   []struct {
				ID   int    `json:"id"`
				Name string `json:"name"`
			} `json:"fields"`
		} `json:"schemas"`
	}
	if err := json.Unmarshal(b, &md); err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, s := range md.Schemas {
		if s.SchemaID == md.CurrentSchemaID {
			for _, f := range s.Fields {
				ids[f.Name] = f.ID
			}
		}
	}
	return ids, len(md.Schemas)
}

func fmtSscan(name string, n *int) (int, error) {
	return fmt.Sscanf(strings.TrimSuffix(name, ".metadata.json"), "v%d", n)
}

// Three writer versions into one table, then an incompatible fourth: a
// field added with a default and an added nullable field each become a
// new column with a new id (earlier columns keep theirs; rows written
// before read null, rows after their value), and a field whose type
// changes fails the run, naming the column, with the table unchanged.
func TestIcebergSchemaEvolution(t *testing.T) {
	env := loadertest.Start(t)
	const topic = "iceevolve"
	env.CreateTopic(t, topic, 1)
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	dir := t.TempDir()
	tableDir := filepath.Join(dir, "db", topic)
	cfg := config(env, "file://"+dir, topic)
	cfg.Table = "db"

	v1text := loadertest.Schema(t, "pageview")
	env.Produce(t, topic, v1text, loadertest.PageViews(0, 100, 1, from, time.Hour))
	run(t, cfg)
	ids1, _ := tableColumns(t, tableDir)

	v2text := strings.Replace(v1text, `{"name": "durationMs"`, `{"name": "country", "type": "string", "default": "unknown"},
    {"name": "durationMs"`, 1)
	v2 := loadertest.PageViews(100, 100, 1, from, time.Hour)
	for _, e := range v2 {
		e.Value["country"] = "se"
	}
	env.Produce(t, topic, v2text, v2)
	run(t, cfg)
	ids2, _ := tableColumns(t, tableDir)

	v3text := strings.Replace(v2text, `{"name": "durationMs"`, `{"name": "campaign", "type": ["null", "string"], "default": null},
    {"name": "durationMs"`, 1)
	v3 := loadertest.PageViews(200, 100, 1, from, time.Hour)
	for _, e := range v3 {
		e.Value["country"] = "no"
		e.Value["campaign"] = map[string]any{"string": "spring"}
	}
	env.Produce(t, topic, v3text, v3)
	run(t, cfg)
	ids3, schemas := tableColumns(t, tableDir)

	for name, id := range ids1 {
		if ids3[name] != id {
			t.Errorf("column %s: id %d in the first schema, %d in the third", name, id, ids3[name])
		}
	}
	last := 0
	for _, id := range ids1 {
		last = max(last, id)
	}
	if ids2["country"] <= last || ids3["campaign"] <= ids2["country"] || ids3["country"] != ids2["country"] {
		t.Errorf("new columns' ids: country %d (then %d), campaign %d; the first schema's highest was %d", ids2["country"], ids3["country"], ids3["campaign"], last)
	}
	if schemas != 3 {
		t.Errorf("%d schemas in the table, want 3", schemas)
	}
	tab := pyicebergRead(t, tableDir, "country", "campaign")
	count := func(col string) map[string]int {
		out := map[string]int{}
		for _, v := range tab.Values[col] {
			if v == nil {
				out["null"]++
			} else {
				out[*v]++
			}
		}
		return out
	}
	if got := count("country"); got["null"] != 100 || got["se"] != 100 || got["no"] != 100 {
		t.Errorf("country as pyiceberg reads it: %v; want 100 null (written before the column), 100 se, 100 no", got)
	}
	if got := count("campaign"); got["null"] != 200 || got["spring"] != 100 {
		t.Errorf("campaign as pyiceberg reads it: %v; want 200 null, 100 spring", got)
	}

	// An incompatible fourth version (registered under compatibility NONE).
	ctx := context.Background()
	for _, r := range env.Registry.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, topic+"-value") {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	v4text := strings.Replace(v3text, `{"name": "memberId", "type": "long"`, `{"name": "memberId", "type": "string"`, 1)
	v4 := loadertest.PageViews(300, 10, 1, from, time.Hour)
	for _, e := range v4 {
		e.Value["country"] = "dk"
		e.Value["campaign"] = nil
		e.Value["memberId"] = "m"
	}
	env.Produce(t, topic, v4text, v4)
	sum, err := loader.Run(ctx, cfg)
	if err == nil || sum.Committed {
		t.Fatalf("a run with an incompatible table schema: committed=%v, %v", sum.Committed, err)
	}
	if !strings.Contains(err.Error(), "memberId") || !strings.Contains(err.Error(), "long") {
		t.Errorf("the error does not name the column and its type: %v", err)
	}
	t.Logf("refused: %v", err)
	if after := pyicebergRead(t, tableDir); after.Snapshots != 3 || len(after.GUIDs) != 300 {
		t.Errorf("after the refused run: %d snapshots, %d records; want 3 and 300", after.Snapshots, len(after.GUIDs))
	}
}

// Compacting a table of small files: each complete hour's files become
// one, in a replace snapshot; pyiceberg reads every event once with the
// hours' counts unchanged, and the offsets stay, so the next load goes on
// from them. A compaction killed before its commit changes nothing, and
// the next one deletes the merged files it left.
func TestIcebergCompact(t *testing.T) {
	const n = 3000
	env := loadertest.Start(t)
	env.CreateTopic(t, "icecompact", 3)
	from := time.Now().UTC().Truncate(time.Hour).Add(-5 * time.Hour)
	events := loadertest.PageViews(0, n, 3, from, 3*time.Hour)
	env.Produce(t, "icecompact", loadertest.Schema(t, "pageview"), events[:2*n/3])
	dir := t.TempDir()
	tableDir := filepath.Join(dir, "db", "icecompact")
	cfg := config(env, "file://"+dir, "icecompact")
	cfg.Table, cfg.FileMaxRecords, cfg.LockTTL = "db", 100, 2*time.Second
	for range 2 {
		cfg.MaxRecords = n / 3
		run(t, cfg)
	}
	before := pyicebergRead(t, tableDir)

	cc := loader.CompactConfig{Warehouse: "file://" + dir, Topic: "icecompact", Table: "db", LockTTL: 2 * time.Second, Logger: quiet}
	killed := cc
	killed.Fault = crashAt(loader.CompactBeforeSwap)
	if _, err := loader.Compact(context.Background(), killed); err == nil {
		t.Fatal("the fault did not stop the compaction")
	}
	if after := pyicebergRead(t, tableDir); after.Snapshots != before.Snapshots || len(after.Files) != len(before.Files) {
		t.Fatalf("a compaction killed before its commit changed the table: %d snapshots, %d files; before %d, %d", after.Snapshots, len(after.Files), before.Snapshots, len(before.Files))
	}
	time.Sleep(cc.LockTTL) // the killed compaction's lock expires
	done, err := loader.Compact(context.Background(), cc)
	if err != nil || len(done) != len(before.Hours) {
		t.Fatalf("compacted %+v, %v; want the %d hours", done, err, len(before.Hours))
	}
	after := pyicebergRead(t, tableDir)
	if after.Summary["operation"] != "replace" || len(after.Files) != len(before.Hours) {
		t.Errorf("after compaction: %s snapshot, %d files for %d hours", after.Summary["operation"], len(after.Files), len(before.Hours))
	}
	if !reflect.DeepEqual(after.Hours, before.Hours) || len(after.GUIDs) != len(before.GUIDs) {
		t.Errorf("hours %v (%d records) after compaction, %v (%d) before", after.Hours, len(after.GUIDs), before.Hours, len(before.GUIDs))
	}
	var orphans []string
	filepath.WalkDir(tableDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".compact-") && !slices.Contains(after.Files, "file://"+p) {
			orphans = append(orphans, p)
		}
		return nil
	})
	if len(orphans) > 0 {
		t.Errorf("merged files in no snapshot: %v", orphans)
	}

	cfg.MaxRecords = 0
	env.Produce(t, "icecompact", loadertest.Schema(t, "pageview"), events[2*n/3:])
	if sum := run(t, cfg); sum.Records != n-2*n/3 {
		t.Errorf("the load after compaction loaded %d records, want %d", sum.Records, n-2*n/3)
	}
	checkIcebergExactlyOnce(t, tableDir, events, logEnds(t, env, "icecompact", 3))
}
