package loader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// tableFiles follows a table's metadata through the warehouse, as a
// reader would: newest version, its current snapshot's manifest list, the
// manifests. It returns the data files (warehouse paths), the records the
// manifests count and the current snapshot's summary.
func tableFiles(t *testing.T, w warehouse.FS, tableDir string) ([]string, int64, map[string]string) {
	t.Helper()
	infos, err := w.ReadDir(path.Join(tableDir, "metadata"))
	if err != nil {
		t.Fatal(err)
	}
	best := 0
	for _, fi := range infos {
		var n int
		if _, err := fmt.Sscanf(fi.Name(), "v%d.metadata.json", &n); err == nil && strings.HasSuffix(fi.Name(), ".metadata.json") {
			best = max(best, n)
		}
	}
	b, err := warehouse.ReadFile(w, path.Join(tableDir, "metadata", "v"+strconv.Itoa(best)+".metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		Current   int64 `json:"current-snapshot-id"`
		Snapshots []struct {
			ID      int64             `json:"snapshot-id"`
			List    string            `json:"manifest-list"`
			Summary map[string]string `json:"summary"`
		} `json:"snapshots"`
	}
	if err := json.Unmarshal(b, &md); err != nil {
		t.Fatal(err)
	}
	root := strings.TrimSuffix(w.String(), "/") + "/"
	readAvro := func(uri string) []map[string]any {
		if !strings.HasPrefix(uri, root) {
			t.Fatalf("%s is not in the warehouse %s", uri, root)
		}
		data, err := warehouse.ReadFile(w, strings.TrimPrefix(uri, root))
		if err != nil {
			t.Fatal(err)
		}
		r, err := goavro.NewOCFReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var out []map[string]any
		for r.Scan() {
			v, err := r.Read()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v.(map[string]any))
		}
		return out
	}
	for _, s := range md.Snapshots {
		if s.ID != md.Current {
			continue
		}
		var files []string
		var records int64
		for _, mf := range readAvro(s.List) {
			for _, e := range readAvro(mf["manifest_path"].(string)) {
				if e["status"].(int32) == 2 {
					continue
				}
				df := e["data_file"].(map[string]any)
				files = append(files, strings.TrimPrefix(df["file_path"].(string), root))
				records += df["record_count"].(int64)
			}
		}
		return files, records, s.Summary
	}
	t.Fatalf("table %s has no current snapshot", tableDir)
	return nil, 0, nil
}

// A table load into the HDFS mini cluster, killed inside its table commit
// and run again, then killed after it and run again, then compacted: the
// table, followed through its metadata on HDFS, holds every event once
// (its files read by pyarrow), and the current snapshot's offsets are the
// logs' ends.
func TestIcebergOnHDFS(t *testing.T) {
	const n = 3000
	env := loadertest.Start(t)
	env.CreateTopic(t, "icehdfs", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	events := loadertest.PageViews(0, n, 2, from, 2*time.Hour)
	env.Produce(t, "icehdfs", loadertest.Schema(t, "pageview"), events[:n/2])

	url := testenv.HDFSWarehouse(t)
	cfg := config(env, url, "icehdfs")
	cfg.Table, cfg.FileMaxRecords = "db", 500
	crashing := cfg
	crashing.Fault = crashAt(loader.FaultTableCommit)
	if sum, err := loader.Run(context.Background(), crashing); err == nil || sum.Committed {
		t.Fatalf("killed inside the table commit: committed=%v, %v", sum.Committed, err)
	}
	runAfterExpiry(t, cfg)
	env.Produce(t, "icehdfs", loadertest.Schema(t, "pageview"), events[n/2:])
	crashing.Fault = crashAt(loader.FaultAfterCommit)
	if sum, err := loader.Run(context.Background(), crashing); err == nil || !sum.Committed {
		t.Fatalf("killed after the commit: committed=%v, %v", sum.Committed, err)
	}
	if next := runAfterExpiry(t, cfg); len(next.Recovered) != 1 || next.Records != 0 {
		t.Errorf("the next run recovered %v and loaded %d, want the killed run and nothing new", next.Recovered, next.Records)
	}

	w := openWarehouse(t, url)
	files, records, summary := tableFiles(t, w, "db/icehdfs")
	if records != n {
		t.Errorf("the manifests count %d records, %d were produced", records, n)
	}
	var offsets map[string]int64
	json.Unmarshal([]byte(summary["tributary.offsets"]), &offsets)
	for p, end := range logEnds(t, env, "icehdfs", 2) {
		if offsets[strconv.Itoa(int(p))] != end {
			t.Errorf("partition %d: the current snapshot's offset is %d, the log ends at %d", p, offsets[strconv.Itoa(int(p))], end)
		}
	}
	// Compacted on HDFS: one file an hour, the same records.
	before := len(files)
	done, err := loader.Compact(context.Background(), loader.CompactConfig{Warehouse: url, Topic: "icehdfs", Table: "db", LockTTL: cfg.LockTTL, Logger: quiet})
	if err != nil || len(done) == 0 {
		t.Fatalf("compacting on HDFS: %+v, %v", done, err)
	}
	if files, records, _ = tableFiles(t, w, "db/icehdfs"); records != n || len(files) != len(done) {
		t.Errorf("after compaction: %d files (%d before) holding %d records; want %d files, %d records", len(files), before, records, len(done), n)
	}
	dir := t.TempDir()
	copyOut(t, w, ".", dir)
	var local []string
	for _, f := range files {
		local = append(local, filepath.Join(dir, f))
	}
	cmd := exec.Command("python3", filepath.Join("testdata", "read_iceberg.py"), "--files")
	cmd.Stdin = strings.NewReader(strings.Join(local, "\n"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyarrow could not read the table's files: %v\n%s", err, stderr.String())
	}
	var got struct {
		GUIDs []string `json:"guids"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, g := range got.GUIDs {
		seen[g]++
	}
	missing := 0
	for _, e := range events {
		if seen[loadertest.GUID(e.Value)] != 1 {
			missing++
		}
	}
	if missing > 0 || len(got.GUIDs) != n {
		t.Errorf("the table's files hold %d records; %d of %d events are not there exactly once", len(got.GUIDs), missing, n)
	}
}
