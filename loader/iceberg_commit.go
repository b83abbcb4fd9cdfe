package loader

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// A table's commit: files, manifest, manifest list, then the new version.

// commitIceTable commits the table files of m for topic as one snapshot.
// It moves them into the table's data directories first (unreferenced,
// so invisible to readers), writes the manifest and manifest list, and
// commits the new metadata through the table's catalog (a new
// vN.metadata.json, or the REST catalog's commit). A table that already
// holds the run's snapshot is left alone, so that recovery can call it
// again.
func commitIceTable(w *warehouse.Batch, cat iceCatalog, m *Manifest, topic string, now time.Time, fault func(FaultPoint) error) error {
	tc := m.Tables[topic]
	md, err := cat.load(tc.Dir)
	if err != nil {
		return err
	}
	base := md
	if md.snapshotOf(m.Run) != nil {
		return nil
	}
	if cur := md.current(); (cur == nil && tc.Base != 0) || (cur != nil && cur.SnapshotID != tc.Base) {
		return fmt.Errorf("table %s: its current snapshot is no longer %d, which the run began from: not committing the same offsets twice (%w)", tc.Dir, tc.Base, errTableMoved)
	}
	root := iceRoot(w)
	var files []iceDataFile
	var added, addedBytes int64
	for _, f := range m.Files {
		if f.Topic != topic || f.Kind != "data" {
			continue
		}
		if err := (&mover{w: w}).move(f); err != nil {
			return fmt.Errorf("run %s: moving %s into table %s: %w", m.Run, f.Final, tc.Dir, err)
		}
		hour, err := warehouse.HourStart(path.Dir(f.Final))
		if err != nil {
			return err
		}
		files = append(files, iceDataFile{path: root + "/" + f.Final, hour: int32(hour.Unix() / 3600), records: f.Records,
			bytes: f.Bytes, status: iceStatusAdded, snapshot: tc.Snapshot})
		added += f.Records
		addedBytes += f.Bytes
	}
	if err := w.Sync(); err != nil {
		return err
	}
	if md == nil {
		md = newIceMetadata(root, tc.Dir, now)
	}
	next, err := md.evolve(tc)
	if err != nil {
		return fmt.Errorf("table %s: %w", tc.Dir, err)
	}
	seq := md.LastSequenceNumber + 1
	metaDir := path.Join(tc.Dir, iceMetadataDir)
	schemaJSON, _ := json.Marshal(next.schema())
	var entries []any
	if len(files) > 0 {
		name := path.Join(metaDir, m.Run+"-m0.avro")
		n, err := writeIceManifest(w, name, tc.Snapshot, files, map[string]string{
			"schema": string(schemaJSON), "schema-id": strconv.Itoa(next.CurrentSchemaID),
			"partition-spec": iceSpecFields(tc.Fields), "partition-spec-id": "0",
			"format-version": "2", "content": "data",
		})
		if err != nil {
			return fmt.Errorf("table %s: writing manifest: %w", tc.Dir, err)
		}
		entries = append(entries, iceManifestSummary(root+"/"+name, n, tc.Snapshot, seq, files))
	}
	var parent int64
	if cur := md.current(); cur != nil {
		parent = cur.SnapshotID
		prev, err := readIceAvro(w, strings.TrimPrefix(cur.ManifestList, root+"/"), "manifest_path")
		if err != nil {
			return fmt.Errorf("table %s: manifest list of snapshot %d: %w", tc.Dir, parent, err)
		}
		entries = append(entries, prev...)
	}
	list := path.Join(metaDir, fmt.Sprintf("snap-%d-%s.avro", tc.Snapshot, m.Run))
	if err := writeIceManifestList(w, list, tc.Snapshot, parent, seq, entries); err != nil {
		return fmt.Errorf("table %s: %w", tc.Dir, err)
	}
	summary, err := iceSummary(m, topic, md.current(), added, addedBytes, len(files))
	if err != nil {
		return err
	}
	snap := iceSnapshot{SnapshotID: tc.Snapshot, SequenceNumber: seq, TimestampMs: now.UnixMilli(),
		ManifestList: root + "/" + list, Summary: summary, SchemaID: &next.CurrentSchemaID}
	if parent != 0 {
		snap.ParentSnapshotID = &parent
	}
	next.Snapshots = append(next.Snapshots, snap)
	next.CurrentSnapshotID = tc.Snapshot
	next.LastSequenceNumber = seq
	next.LastUpdatedMs = now.UnixMilli()
	next.SnapshotLog = append(next.SnapshotLog, iceLogEntry{TimestampMs: now.UnixMilli(), SnapshotID: tc.Snapshot})
	if md.file != "" {
		next.MetadataLog = append(next.MetadataLog, iceLogEntry{TimestampMs: md.LastUpdatedMs, MetadataFile: root + "/" + md.file})
	}
	next.Refs["main"] = iceRef{SnapshotID: tc.Snapshot, Type: "branch"}
	for _, h := range strings.Split(summary[iceHoursKey], ",") {
		if h != "" {
			next.Refs[iceHourTagPrefix+h] = iceRef{SnapshotID: tc.Snapshot, Type: "tag"}
		}
	}
	return cat.commit(tc.Dir, base, next, m.Run, fault)
}

// iceSummary is the snapshot's summary: Iceberg's counts and the loader's
// offsets and state for the topic.
func iceSummary(m *Manifest, topic string, prev *iceSnapshot, added, addedBytes int64, files int) (map[string]string, error) {
	tc, ts := m.Tables[topic], m.Topics[topic]
	offsets := map[string]int64{}
	for p, ps := range ts.Partitions {
		offsets[strconv.Itoa(int(p))] = ps.Next
	}
	from := map[string]int64{}
	for p, o := range tc.From {
		from[strconv.Itoa(int(p))] = o
	}
	state, err := json.Marshal(ts)
	if err != nil {
		return nil, err
	}
	o, _ := json.Marshal(offsets)
	f, _ := json.Marshal(from)
	s := map[string]string{
		"operation":        "append",
		"added-data-files": strconv.Itoa(files),
		"added-records":    strconv.FormatInt(added, 10),
		"added-files-size": strconv.FormatInt(addedBytes, 10),
		iceRunKey:          m.Run,
		iceOffsetsKey:      string(o),
		iceFromKey:         string(f),
		iceStateKey:        string(state),
	}
	totals := map[string]int64{"total-records": added, "total-data-files": int64(files), "total-files-size": addedBytes}
	for k, v := range totals {
		if prev != nil {
			n, err := strconv.ParseInt(prev.Summary[k], 10, 64)
			if err != nil {
				continue // an earlier writer kept no totals: none now either
			}
			v += n
		}
		s[k] = strconv.FormatInt(v, 10)
	}
	var hours []string
	for _, dir := range m.Markers {
		if strings.HasPrefix(dir, tc.Dir+"/") {
			if h, err := warehouse.HourStart(dir); err == nil {
				hours = append(hours, h.UTC().Format("2006-01-02-15"))
			}
		}
	}
	sort.Strings(hours)
	if len(hours) > 0 {
		s[iceHoursKey] = strings.Join(hours, ",")
	}
	return s, nil
}

// publishIceVersion writes version n of a table, only if no writer has
// written it: the version's appearance is the table's commit point. Two
// writers that read version n-1 (a run paused past its lease and the run
// that took its topic over) race for the same name, and exactly one wins;
// the other gets an error satisfying errors.Is(err, errTableMoved).
//
// On a warehouse with rename, the version is written whole under a
// temporary name and renamed into place without replacing
// (RenameNoReplace: renameat2 locally, HDFS's rename without overwrite).
// On an object store, which has no rename, it is one PUT with
// If-None-Match: * straight to vN.metadata.json: the object appears whole
// or not at all, and only if the name was free.
func publishIceVersion(w *warehouse.Batch, dir string, n int, md *iceMetadata, run string, fault func(FaultPoint) error) error {
	// Readers want lists, never null.
	md.Snapshots = nonNil(md.Snapshots)
	md.SnapshotLog = nonNil(md.SnapshotLog)
	md.MetadataLog = nonNil(md.MetadataLog)
	data, err := json.MarshalIndent(md, "", "  ")
	if err != nil {
		return err
	}
	metaDir := path.Join(dir, iceMetadataDir)
	final := path.Join(metaDir, fmt.Sprintf("v%d.metadata.json", n))
	whole := warehouse.WholeObjectWrites(w)
	if whole {
		if fault != nil {
			if err := fault(FaultTableCommit); err != nil {
				return err
			}
		}
		err = w.CreateExclusive(final, data)
	} else {
		tmp := path.Join(metaDir, fmt.Sprintf(".v%d-%s.metadata.json.tmp", n, run))
		if err := warehouse.WriteFile(w, tmp, data); err != nil {
			return fmt.Errorf("table %s: writing version %d: %w", dir, n, err)
		}
		if err := w.Sync(); err != nil {
			return err
		}
		if fault != nil {
			if err := fault(FaultTableCommit); err != nil {
				return err
			}
		}
		if err = w.RenameNoReplace(tmp, final); errors.Is(err, fs.ErrExist) {
			w.Remove(tmp)
		}
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("table %s: version %d was committed by another writer: not committing (%w)", dir, n, errTableMoved)
	}
	if err != nil {
		return fmt.Errorf("table %s: committing version %d: %w", dir, n, err)
	}
	if err := w.Sync(); err != nil {
		return err
	}
	// The hint only helps readers find the version sooner; they (and the
	// loader) take the highest version file, so a stale hint is harmless.
	// One temporary name for every run (they hold the topic's lock): one
	// cut short leaves it for the next to replace.
	hint := path.Join(metaDir, iceHintName)
	if whole {
		warehouse.WriteFile(w, hint, []byte(strconv.Itoa(n)))
		return nil
	}
	hintTmp := path.Join(metaDir, "."+iceHintName+".tmp")
	if err := warehouse.WriteFile(w, hintTmp, []byte(strconv.Itoa(n))); err == nil {
		w.Rename(hintTmp, hint)
	}
	return nil
}

// errTableMoved is a table commit's refusal: another writer committed the
// table after the run read it. Nothing of the refused version is in the
// table, so the run's files may be deleted.
var errTableMoved = errors.New("the table moved on")

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// tagIceHours marks hours complete in a table after its commit (by the
// audit, which judges them once the run's counts are published): one new
// version whose tags hour-YYYY-MM-DD-HH name the current snapshot, which
// holds the hours' records. Hours already tagged keep their tags.
func tagIceHours(w *warehouse.Batch, cat iceCatalog, dir, run string, hours []time.Time, now time.Time) error {
	md, err := cat.load(dir)
	if err != nil {
		return err
	}
	cur := md.current()
	if cur == nil {
		return nil
	}
	next := md.clone()
	added := 0
	for _, h := range hours {
		name := iceHourTagPrefix + h.UTC().Format("2006-01-02-15")
		if _, ok := next.Refs[name]; !ok {
			next.Refs[name] = iceRef{SnapshotID: cur.SnapshotID, Type: "tag"}
			added++
		}
	}
	if added == 0 {
		return nil
	}
	next.LastUpdatedMs = now.UnixMilli()
	next.MetadataLog = append(next.MetadataLog, iceLogEntry{TimestampMs: md.LastUpdatedMs, MetadataFile: iceRoot(w) + "/" + md.file})
	return cat.commit(dir, md, next, run, nil)
}

// commitWithTables commits a run that loaded Iceberg tables: the first
// table's new version is the run's commit point (iceberg.go), fenced by
// the table's own check of its current snapshot; the loader's commit
// follows it, as recovery would, without a check of its own.
func (r *run) commitWithTables(m *Manifest, staged string) error {
	_, last, err := listCommitLog(r.w)
	if err != nil {
		return err
	}
	m.Seq = last + 1 // provisional: publish numbers it again
	if err := writeJSON(r.batch, staged, m); err != nil {
		return fmt.Errorf("writing the manifest: %w", err)
	}
	if err := r.batch.Sync(); err != nil {
		return fmt.Errorf("writing the run's files: %w", err)
	}
	if err := r.hook(FaultBeforeCommit); err != nil {
		return err
	}
	if err := r.checkLocks(); err != nil {
		return err
	}
	if err := r.hook(FaultCommitPoint); err != nil {
		return err
	}
	committed, err := commitTables(r.batch, r.cat, m, m.Committed, r.hook)
	r.sum.Committed = committed
	if err != nil {
		if committed {
			return fmt.Errorf("run %s is committed, but %w; the next run finishes it", r.id, err)
		}
		switch {
		case r.crashed.Load():
		case errors.Is(err, errTableMoved):
			// Refused, so nothing of the run is in any table: the files
			// it moved into them go, as recovery would delete them.
			if derr := (&mover{w: r.batch}).discardTables(m); derr != nil {
				r.log.Warn("deleting the files of a refused table commit", "err", derr)
			}
		default:
			// The commit may have happened: the next run's recovery
			// finds the run's snapshot in the table or not, and finishes
			// or discards the run.
			r.commitUnknown = true
			return fmt.Errorf("%w; whether run %s committed is unknown, and the next run finds out", err, r.id)
		}
		return err
	}
	if err := publish(r.batch, m, r.base, false, staged, nil); err != nil {
		return fmt.Errorf("run %s is committed, but committing its manifest in %s failed: %w; the next run finishes it", r.id, r.w, err)
	}
	r.committed()
	return nil
}
