package loader

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// Iceberg tables (Config.Table). Each topic is loaded into the table
// <warehouse>/<Config.Table>/<topic> of the file-system (Hadoop) catalog
// whose warehouse is the loader's, so Spark's
// spark.sql.catalog.C.type=hadoop with C.warehouse=<warehouse> reads it as
// C.<Config.Table>.<topic>. A run writes Parquet files as a Parquet load
// does (records resolved to the topic's table schema, plus the event time
// column) and commits, per table, one snapshot adding them, whose summary
// holds the topic's offsets: the table's current snapshot is where the
// next run resumes, so the table's commit is the data and offsets commit.
//
// A run's commit, per table: the loader manifest (with the table's
// TableCommit) is written in the run's directory; the data files move
// into the table's data directories (no snapshot names them yet); the
// manifest, manifest list and new version are written, the version last
// (iceberg_table.go). The loader manifest is then renamed into
// _tributary/commits, as for any run, which publishes the audit counts
// and writes markers. Recovery of a run cut short between the two:
// a run whose snapshot is in one of its tables is committed, and its
// other tables' commits and its manifest's rename are finished; a run
// with no snapshot in any table is discarded, with the files it had moved
// into the tables.

// FaultTableCommit: a table's new version is written whole under a
// temporary name; the rename that commits it has not happened.
const FaultTableCommit FaultPoint = "table-commit"

// TableFaultPoints lists the crash points of table loads beyond
// FaultPoints.
var TableFaultPoints = []FaultPoint{FaultTableCommit}

// CheckTableName refuses a table namespace that is not one directory name
// of the warehouse's data.
func CheckTableName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, "_") {
		return fmt.Errorf("table namespace %q: want one directory name, not starting with _", name)
	}
	return nil
}

// tableDir is a topic's table in the warehouse.
func (r *run) tableDir(topic string) string { return path.Join(r.cfg.Table, topic) }

// tableStates replaces the loader manifests' state of each topic by its
// table's: the offsets in the current snapshot are where the run
// resumes. A topic whose table has no snapshot starts afresh, whatever
// earlier loads of other formats committed. It remembers each table's
// current snapshot, against which the run's commit is checked.
func (r *run) tableStates(topics []string, state map[string]*TopicState) error {
	r.tableBase = map[string]int64{}
	for _, t := range topics {
		md, err := r.cat.load(r.tableDir(t))
		if err != nil {
			return err
		}
		ts, err := md.state()
		if err != nil {
			return fmt.Errorf("table %s: %w", r.tableDir(t), err)
		}
		state[t] = ts
		if cur := md.current(); cur != nil {
			r.tableBase[t] = cur.SnapshotID
		}
	}
	return nil
}

// icebergTableSchema converts the topic's table schema (Avro) into the
// table's next Iceberg schema, checked against the table's current one:
// an incompatible change fails the run here, before anything is loaded.
func (r *run) icebergTableSchema(topic string, avroText string) ([]iceField, int, error) {
	s, err := avro.ParseWithCache(avroText, "", &avro.SchemaCache{})
	if err != nil {
		return nil, 0, err
	}
	md, err := r.cat.load(r.tableDir(topic))
	if err != nil {
		return nil, 0, err
	}
	var prev []iceField
	last := 0
	if cur := md.schema(); cur != nil {
		prev, last = cur.Fields, md.LastColumnID
	}
	fields, last, err := icebergSchema(s, prev, last)
	if err != nil {
		return nil, 0, fmt.Errorf("table %s cannot take the topic's schema: %w", r.tableDir(topic), err)
	}
	return fields, last, nil
}

// prepareTables adds to m what each table's commit needs. A table gets a
// snapshot when the run added files to it or moved its offsets.
func (r *run) prepareTables(ctx context.Context, m *Manifest, plans []*partPlan) error {
	if r.cfg.Table == "" {
		return nil
	}
	from := map[string]map[int32]int64{}
	moved := map[string]bool{}
	for _, pl := range plans {
		if from[pl.topic] == nil {
			from[pl.topic] = map[int32]int64{}
		}
		from[pl.topic][pl.part] = pl.start
		if pl.next != pl.start || len(pl.writer.files) > 0 {
			moved[pl.topic] = true
		}
	}
	topics := make([]string, 0, len(moved))
	for t := range moved {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		tt, err := r.tables.topic(ctx, t)
		if err != nil {
			return err
		}
		if m.Tables == nil {
			m.Tables = map[string]*TableCommit{}
		}
		m.Tables[t] = &TableCommit{Dir: r.tableDir(t), Base: r.tableBase[t], Snapshot: newSnapshotID(),
			SchemaID: tt.latest, Fields: tt.ice, LastColumnID: tt.iceLast, From: from[t], Catalog: r.cat.uri()}
	}
	return nil
}

// commitTables commits every table of m, in the order of their names. Once
// the first is committed, so is the run: committed says so, also with an
// error.
func commitTables(w *warehouse.Batch, cat iceCatalog, m *Manifest, now time.Time, fault func(FaultPoint) error) (committed bool, err error) {
	topics := make([]string, 0, len(m.Tables))
	for t := range m.Tables {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for i, t := range topics {
		if i > 0 && fault != nil {
			if err := fault(FaultTableCommit); err != nil {
				return true, err
			}
		}
		if err := commitIceTable(w, cat, m, t, now, fault); err != nil {
			return i > 0, err
		}
	}
	return true, nil
}

// tableRun tells recovery what became of an uncommitted run that loaded
// tables: committed (its snapshot is in one of them) or not, and its
// manifest (nil when it never wrote one: nothing of it is in a table).
func (mv *mover) tableRun(run string) (*Manifest, bool, error) {
	data, err := readStateFile(mv.w, path.Join(runDir(run), manifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	m, err := decodeManifest(data, run)
	if err != nil {
		// Torn while written: the run died before its commit.
		return nil, false, nil
	}
	if len(m.Tables) == 0 {
		return nil, false, nil
	}
	for _, tc := range m.Tables {
		if mv.cat.uri() != tc.Catalog {
			where := "the file-system catalog"
			if tc.Catalog != "" {
				where = "the REST catalog " + tc.Catalog
			}
			return nil, false, fmt.Errorf("it loaded table %s through %s: recover it with a load of its topics through that catalog (--table and --catalog as it had), which finds out whether it committed", tc.Dir, where)
		}
		md, err := mv.cat.load(tc.Dir)
		if err != nil {
			return nil, false, err
		}
		if md.snapshotOf(run) != nil {
			return m, true, nil
		}
	}
	return m, false, nil
}

// finishTables completes a run whose snapshot is in some of its tables:
// the other tables get theirs, and its manifest is committed.
func (mv *mover) finishTables(m *Manifest) error {
	mv.log.Warn("finishing the table commits of a run that was cut short", "run", m.Run, "tables", len(m.Tables))
	if _, err := commitTables(mv.w, mv.cat, m, m.Committed, nil); err != nil {
		return fmt.Errorf("run %s: %w", m.Run, err)
	}
	return publish(mv.w, m, m.Seq-1, false, path.Join(runDir(m.Run), manifestName), nil)
}

// discardTables deletes what an uncommitted run put into its tables:
// data files it moved there and its manifests, none named by a snapshot.
func (mv *mover) discardTables(m *Manifest) error {
	for _, f := range m.Files {
		if tc := m.Tables[f.Topic]; tc != nil && f.Kind == "data" {
			if err := mv.w.Remove(f.Final); err != nil {
				return err
			}
		}
	}
	for _, tc := range m.Tables {
		metaDir := path.Join(tc.Dir, iceMetadataDir)
		for _, name := range []string{m.Run + "-m0.avro", fmt.Sprintf("snap-%d-%s.avro", tc.Snapshot, m.Run)} {
			if err := mv.w.Remove(path.Join(metaDir, name)); err != nil {
				return err
			}
		}
		infos, err := mv.w.ReadDir(metaDir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, fi := range infos {
			if strings.HasPrefix(fi.Name(), ".") && strings.Contains(fi.Name(), m.Run) {
				if err := mv.w.Remove(path.Join(metaDir, fi.Name())); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
