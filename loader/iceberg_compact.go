package loader

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// Compaction of an Iceberg table (CompactConfig.Table): an hour's files of
// one schema are merged into one, committed as a "replace" snapshot that
// deletes them and adds the merged file. Readers of the table see the
// snapshot before or after it, so the old files or the new one, never both
// nor neither, on HDFS as on a local warehouse. The snapshot keeps the
// previous one's offsets and state, so loads resume where they were. A
// compaction killed before its commit leaves a merged file no snapshot
// names, which the next compaction deletes. The replaced files stay on
// disk for the snapshots that still name them (no snapshot expiry yet).

// iceLiveFile is a data file of the current snapshot, as its manifest
// lists it.
type iceLiveFile struct {
	iceDataFile
	schemaID int
}

var iceSchemaInName = regexp.MustCompile(`\.s([0-9]+)\.[^/]*parquet$`)

// iceLiveFiles reads the current snapshot's data files.
func iceLiveFiles(w warehouse.FS, md *iceMetadata) ([]iceLiveFile, error) {
	cur := md.current()
	if cur == nil {
		return nil, nil
	}
	root := iceRoot(w) + "/"
	list, err := readIceAvro(w, strings.TrimPrefix(cur.ManifestList, root), "manifest_path")
	if err != nil {
		return nil, err
	}
	var out []iceLiveFile
	for _, e := range list {
		mf, _ := e.(map[string]any)
		mpath, _ := mf["manifest_path"].(string)
		mseq, _ := mf["sequence_number"].(int64)
		msnap, _ := mf["added_snapshot_id"].(int64)
		entries, err := readIceAvro(w, strings.TrimPrefix(mpath, root), "data_file")
		if err != nil {
			return nil, err
		}
		for _, x := range entries {
			en, _ := x.(map[string]any)
			if st, _ := en["status"].(int32); st == iceStatusDeleted {
				continue
			}
			df, _ := en["data_file"].(map[string]any)
			f := iceLiveFile{iceDataFile: iceDataFile{status: iceStatusExisting, snapshot: msnap, seq: mseq}}
			f.path, _ = df["file_path"].(string)
			f.records, _ = df["record_count"].(int64)
			f.bytes, _ = df["file_size_in_bytes"].(int64)
			if p, ok := df["partition"].(map[string]any); ok {
				if h, ok := p[eventTimeColumn+"_hour"].(map[string]any); ok {
					v, _ := h["int"].(int32)
					f.hour = v
				}
			}
			if s, ok := en["snapshot_id"].(map[string]any); ok {
				f.snapshot, _ = s["long"].(int64)
			}
			if s, ok := en["sequence_number"].(map[string]any); ok {
				f.seq, _ = s["long"].(int64)
			}
			if m := iceSchemaInName.FindStringSubmatch(f.path); m != nil {
				f.schemaID, _ = strconv.Atoi(m[1])
			}
			if !strings.HasPrefix(f.path, root) {
				return nil, fmt.Errorf("data file %s is outside the warehouse %s", f.path, root)
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// compactTableLocked takes the topic's lock, as Compact does, and compacts
// its table.
func compactTableLocked(ctx context.Context, c CompactConfig, w warehouse.FS) ([]CompactedHour, error) {
	if err := CheckTableName(c.Table); err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	lock, err := warehouse.AcquireLock(w, topicLockName(c.Topic), "tributary compact", c.LockTTL)
	if err != nil {
		return nil, fmt.Errorf("compact: topic %s: %w", c.Topic, err)
	}
	if err := unfinishedRuns(w, c.Topic); err != nil {
		lock.Release()
		return nil, err
	}
	done, err := compactTable(ctx, c, w, NewRunID(time.Now()))
	var crash errCrash
	if errors.As(err, &crash) {
		lock.Abandon()
	} else {
		lock.Release()
	}
	for _, h := range done {
		c.Logger.Info("compacted hour", "dir", h.Dir, "files", h.Files, "after", h.After, "records", h.Records)
	}
	return done, err
}

// compactTable is Compact for an Iceberg table; the caller holds the
// topic's lock.
func compactTable(ctx context.Context, c CompactConfig, w warehouse.FS, id string) ([]CompactedHour, error) {
	dir := path.Join(c.Table, c.Topic)
	batch := warehouse.NewBatch(w)
	cat, err := c.Catalog.open(batch)
	if err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	md, err := cat.load(dir)
	if err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	if md.current() == nil {
		return nil, nil
	}
	live, err := iceLiveFiles(w, md)
	if err != nil {
		return nil, fmt.Errorf("compact: table %s: %w", dir, err)
	}
	root := iceRoot(w) + "/"
	if err := removeCompactOrphans(w, dir, md, root); err != nil {
		return nil, err
	}
	wanted := map[int32]bool{}
	for _, h := range c.Hours {
		wanted[int32(h.Unix()/3600)] = true
	}
	for name := range md.Refs {
		if h, err := time.Parse(iceHourTagPrefix+"2006-01-02-15", name); err == nil && len(c.Hours) == 0 {
			wanted[int32(h.Unix()/3600)] = true
		}
	}
	type group struct {
		hour   int32
		schema int
	}
	groups := map[group][]int{} // → indexes into live
	for i, f := range live {
		if wanted[f.hour] {
			g := group{f.hour, f.schemaID}
			groups[g] = append(groups[g], i)
		}
	}
	keys := make([]group, 0, len(groups))
	for g, idx := range groups {
		if len(idx) >= c.MinFiles {
			keys = append(keys, g)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].hour < keys[j].hour || keys[i].hour == keys[j].hour && keys[i].schema < keys[j].schema
	})
	snapshot := newSnapshotID()
	var added []iceDataFile
	replaced := map[int]bool{}
	var done []CompactedHour
	for _, g := range keys {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		hour := time.Unix(int64(g.hour)*3600, 0)
		hdir := tableHour(dir, hour)
		to := path.Join(hdir, fmt.Sprintf("%s.h%s.s%d.compact-%s.parquet", c.Topic, hour.UTC().Format("2006010215"), g.schema, id))
		var names []string
		var want int64
		for _, i := range groups[g] {
			names = append(names, strings.TrimPrefix(live[i].path, root))
			want += live[i].records
		}
		size, err := mergeWarehouseFiles(w, names, to, c.Codec, want)
		if err != nil {
			return nil, err
		}
		for _, i := range groups[g] {
			replaced[i] = true
		}
		added = append(added, iceDataFile{path: root + to, hour: g.hour, records: want, bytes: size, status: iceStatusAdded, snapshot: snapshot})
		done = append(done, CompactedHour{Dir: hdir, Files: len(groups[g]), After: 1, Records: want})
	}
	if c.Fault != nil {
		if err := c.Fault(CompactBeforeSwap); err != nil {
			return nil, errCrash{err}
		}
	}
	if err := commitIceReplace(batch, cat, md, dir, id, snapshot, live, replaced, added); err != nil {
		return nil, err
	}
	return done, nil
}

// commitIceReplace commits a replace snapshot: live files in replaced are
// deleted, the others kept, added added; all in one new manifest.
func commitIceReplace(w *warehouse.Batch, cat iceCatalog, md *iceMetadata, dir, id string, snapshot int64, live []iceLiveFile, replaced map[int]bool, added []iceDataFile) error {
	cur := md.current()
	seq := md.LastSequenceNumber + 1
	root := iceRoot(w) + "/"
	var entries []iceDataFile
	var deletedRecords, deletedBytes, addedRecords, addedBytes int64
	for i, f := range live {
		e := f.iceDataFile
		if replaced[i] {
			e.status, e.snapshot = iceStatusDeleted, snapshot
			deletedRecords += f.records
			deletedBytes += f.bytes
		}
		entries = append(entries, e)
	}
	for _, f := range added {
		addedRecords += f.records
		addedBytes += f.bytes
	}
	entries = append(entries, added...)
	next := md.clone()
	schemaJSON := []byte("{}")
	if s := next.schema(); s != nil {
		schemaJSON, _ = json.Marshal(s)
	}
	metaDir := path.Join(dir, iceMetadataDir)
	name := path.Join(metaDir, "compact-"+id+"-m0.avro")
	var fields []iceField
	if s := next.schema(); s != nil {
		fields = s.Fields
	}
	n, err := writeIceManifest(w, name, snapshot, entries, map[string]string{
		"schema": string(schemaJSON), "schema-id": strconv.Itoa(next.CurrentSchemaID),
		"partition-spec": iceSpecFields(fields), "partition-spec-id": "0", "format-version": "2", "content": "data",
	})
	if err != nil {
		return fmt.Errorf("compact: table %s: %w", dir, err)
	}
	list := path.Join(metaDir, fmt.Sprintf("snap-%d-compact-%s.avro", snapshot, id))
	if err := writeIceManifestList(w, list, snapshot, cur.SnapshotID, seq, []any{iceManifestSummary(root+name, n, snapshot, seq, entries)}); err != nil {
		return fmt.Errorf("compact: table %s: %w", dir, err)
	}
	summary := map[string]string{}
	for k, v := range cur.Summary {
		if strings.HasPrefix(k, "tributary.") && k != iceHoursKey && k != iceRunKey {
			summary[k] = v // offsets and state: loads resume where they were
		}
	}
	summary["operation"] = "replace"
	summary["tributary.compaction"] = id
	summary["added-data-files"] = strconv.Itoa(len(added))
	summary["deleted-data-files"] = strconv.Itoa(len(replaced))
	summary["added-records"] = strconv.FormatInt(addedRecords, 10)
	summary["deleted-records"] = strconv.FormatInt(deletedRecords, 10)
	summary["added-files-size"] = strconv.FormatInt(addedBytes, 10)
	summary["removed-files-size"] = strconv.FormatInt(deletedBytes, 10)
	if v, err := strconv.ParseInt(cur.Summary["total-records"], 10, 64); err == nil {
		summary["total-records"] = strconv.FormatInt(v, 10)
	}
	if v, err := strconv.ParseInt(cur.Summary["total-data-files"], 10, 64); err == nil {
		summary["total-data-files"] = strconv.FormatInt(v+int64(len(added))-int64(len(replaced)), 10)
	}
	if v, err := strconv.ParseInt(cur.Summary["total-files-size"], 10, 64); err == nil {
		summary["total-files-size"] = strconv.FormatInt(v+addedBytes-deletedBytes, 10)
	}
	now := time.Now()
	parent := cur.SnapshotID
	next.Snapshots = append(next.Snapshots, iceSnapshot{SnapshotID: snapshot, ParentSnapshotID: &parent, SequenceNumber: seq,
		TimestampMs: now.UnixMilli(), ManifestList: root + list, Summary: summary, SchemaID: &next.CurrentSchemaID})
	next.CurrentSnapshotID = snapshot
	next.LastSequenceNumber = seq
	next.LastUpdatedMs = now.UnixMilli()
	next.SnapshotLog = append(next.SnapshotLog, iceLogEntry{TimestampMs: now.UnixMilli(), SnapshotID: snapshot})
	next.MetadataLog = append(next.MetadataLog, iceLogEntry{TimestampMs: md.LastUpdatedMs, MetadataFile: root + md.file})
	next.Refs["main"] = iceRef{SnapshotID: snapshot, Type: "branch"}
	return cat.commit(dir, md, next, "compact-"+id, nil)
}

// removeCompactOrphans deletes merged files of killed compactions: named
// as merged files and named by no manifest of any snapshot.
func removeCompactOrphans(w warehouse.FS, dir string, md *iceMetadata, root string) error {
	named := map[string]bool{}
	seen := map[string]bool{}
	for _, s := range md.Snapshots {
		list, err := readIceAvro(w, strings.TrimPrefix(s.ManifestList, root), "manifest_path")
		if err != nil {
			return fmt.Errorf("compact: table %s: %w", dir, err)
		}
		for _, e := range list {
			mf, _ := e.(map[string]any)
			mpath, _ := mf["manifest_path"].(string)
			if seen[mpath] {
				continue
			}
			seen[mpath] = true
			entries, err := readIceAvro(w, strings.TrimPrefix(mpath, root), "data_file")
			if err != nil {
				return fmt.Errorf("compact: table %s: %w", dir, err)
			}
			for _, x := range entries {
				en, _ := x.(map[string]any)
				df, _ := en["data_file"].(map[string]any)
				p, _ := df["file_path"].(string)
				named[strings.TrimPrefix(p, root)] = true
			}
		}
	}
	data := path.Join(dir, "data")
	days, err := w.ReadDir(data)
	if err != nil {
		return nil // no data directory: nothing left behind
	}
	for _, d := range days {
		hours, err := w.ReadDir(path.Join(data, d.Name()))
		if err != nil {
			continue
		}
		for _, h := range hours {
			files, err := w.ReadDir(path.Join(data, d.Name(), h.Name()))
			if err != nil {
				continue
			}
			for _, f := range files {
				name := path.Join(data, d.Name(), h.Name(), f.Name())
				if strings.Contains(f.Name(), ".compact-") && !named[name] {
					if err := w.Remove(name); err != nil {
						return fmt.Errorf("compact: removing %s, left by a killed compaction: %w", name, err)
					}
				}
			}
		}
	}
	return nil
}

// mergeWarehouseFiles copies the rows of names (Parquet files of one
// schema) into one file, durable, and checks its row count: the merge of
// compact.go over the warehouse interface, so HDFS works too.
func mergeWarehouseFiles(w warehouse.FS, names []string, to, codec string, want int64) (int64, error) {
	slices.Sort(names)
	out, err := w.Create(to)
	if err != nil {
		return 0, fmt.Errorf("compact: %w", err)
	}
	cw := &countingWriter{w: out}
	var wr *parquet.GenericWriter[any]
	var got int64
	for _, name := range names {
		b, err := warehouse.ReadFile(w, name)
		if err != nil {
			out.Close()
			return 0, fmt.Errorf("compact: %w", err)
		}
		f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			out.Close()
			return 0, fmt.Errorf("compact: %s: %w", name, err)
		}
		if wr == nil {
			opts := []parquet.WriterOption{f.Schema(), parquetCodec(codec), parquet.CreatedBy("tributary", "", "")}
			for _, key := range []string{"parquet.avro.schema", "tributary.topic", "tributary.schema.id"} {
				if v, ok := f.Lookup(key); ok {
					opts = append(opts, parquet.KeyValueMetadata(key, v))
				}
			}
			wr = parquet.NewGenericWriter[any](cw, opts...)
		} else if !parquet.SameNodes(wr.Schema(), f.Schema()) {
			out.Close()
			return 0, fmt.Errorf("compact: %s: its Parquet schema differs from %s's, though its name gives the same schema id", name, names[0])
		}
		for _, rg := range f.RowGroups() {
			rows := rg.Rows()
			n, err := parquet.CopyRows(wr, rows)
			rows.Close()
			if err != nil {
				out.Close()
				return 0, fmt.Errorf("compact: copying %s: %w", name, err)
			}
			got += n
		}
		if err := wr.Flush(); err != nil {
			out.Close()
			return 0, fmt.Errorf("compact: writing %s: %w", to, err)
		}
	}
	if err := wr.Close(); err != nil {
		out.Close()
		return 0, fmt.Errorf("compact: writing %s: %w", to, err)
	}
	if err := out.Close(); err != nil {
		return 0, fmt.Errorf("compact: writing %s: %w", to, err)
	}
	if got != want {
		return 0, fmt.Errorf("compact: %s holds %d rows, its inputs %d", to, got, want)
	}
	r, err := w.Open(to)
	if err != nil {
		return 0, err
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		return 0, err
	}
	if f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b))); err != nil || f.NumRows() != want {
		return 0, errors.Join(fmt.Errorf("compact: %s does not read back with the %d rows of its inputs", to, want), err)
	}
	return cw.n, nil
}
