package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"golang.org/x/sys/unix"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// Compaction of a Parquet load's small files. A minutely load writes a
// few files per partition and hour; Compact merges each hour's files of
// one schema into one, so readers open a handful of files per hour.
//
// What a caller may rely on:
//   - Readers see an hour's old files or its new ones, never both and
//     never neither: the new hour directory is built beside the old one
//     under a name readers skip ("_hr=HH.compact-<id>": pyarrow, Spark and
//     Hive ignore names starting with "_"), complete and fsynced, and the
//     two directories are then exchanged in one rename (Linux's
//     RENAME_EXCHANGE), after which the old files are deleted.
//   - A compaction killed at any point loses and duplicates nothing: the
//     leftover directory holds either the unswapped new files or the
//     swapped-out old ones, a complete copy either way, and the next
//     compaction deletes it.
//   - It holds the topic's lock, so no load moves files into an hour while
//     it is rewritten, and it refuses to start while a load run of the
//     topic is unfinished (the next load finishes it).
//   - Records are copied row by row, schema and values unchanged; each
//     merged file's row count is checked against its inputs before the
//     swap.
//
// Local warehouses only: HDFS has no atomic exchange of two directories,
// and two renames would leave readers a moment with neither.

// CompactConfig describes one compaction.
type CompactConfig struct {
	// Warehouse is the warehouse URL (file:// only); or FS an open one.
	Warehouse string
	FS        warehouse.FS
	// Topic is the topic whose hours are compacted.
	Topic string
	// Table, if set, compacts the topic's Iceberg table in this namespace
	// (Config.Table) by a replace snapshot, on any warehouse
	// (iceberg_compact.go); without Hours, the hours tagged complete.
	Table string
	// Catalog is the table's catalog (Config.Catalog).
	Catalog CatalogConfig
	// Hours, if set, are the hours to compact; otherwise every hour marked
	// complete (_SUCCESS).
	Hours []time.Time
	// MinFiles is the fewest files of one schema worth merging. Default 2.
	MinFiles int
	// Codec compresses the merged files (ParquetCodecs). Default snappy.
	Codec string
	// LockTTL is the topic lock's lease. Default DefaultLockTTL.
	LockTTL time.Duration
	Logger  *slog.Logger
	// Fault, for crash tests, is called at CompactBeforeSwap and
	// CompactAfterSwap; an error stops the compaction there as a kill
	// would.
	Fault func(FaultPoint) error
}

// Compaction's fault points.
const (
	// CompactBeforeSwap: the new hour directory is complete, not swapped in.
	CompactBeforeSwap FaultPoint = "compact-before-swap"
	// CompactAfterSwap: swapped in; the old files not yet deleted.
	CompactAfterSwap FaultPoint = "compact-after-swap"
)

// CompactFaultPoints lists compaction's fault points in order.
var CompactFaultPoints = []FaultPoint{CompactBeforeSwap, CompactAfterSwap}

// CompactedHour is what Compact did to one hour.
type CompactedHour struct {
	Dir     string `json:"dir"`
	Files   int    `json:"files"` // data files before
	After   int    `json:"after"` // data files after
	Records int64  `json:"records"`
}

// Compact merges small Parquet files hour by hour (see CompactConfig).
func Compact(ctx context.Context, c CompactConfig) ([]CompactedHour, error) {
	if c.Topic == "" {
		return nil, errors.New("compact: no topic given")
	}
	if c.MinFiles < 2 {
		c.MinFiles = 2
	}
	if c.Codec == "" {
		c.Codec = DefaultParquetCodec
	}
	if err := CheckFormatCodec(FormatParquet, c.Codec); err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	if c.LockTTL <= 0 {
		c.LockTTL = DefaultLockTTL
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	w := c.FS
	if w == nil {
		var err error
		if w, err = warehouse.Open(c.Warehouse); err != nil {
			return nil, fmt.Errorf("compact: %w", err)
		}
		defer w.Close()
	}
	if c.Table != "" {
		return compactTableLocked(ctx, c, w)
	}
	local, ok := w.(interface{ Root() string })
	if !ok {
		return nil, fmt.Errorf("compact: %s: compaction needs an atomic exchange of two directories, which only a local warehouse has", w)
	}
	lock, err := warehouse.AcquireLock(w, topicLockName(c.Topic), "tributary compact", c.LockTTL)
	if err != nil {
		return nil, fmt.Errorf("compact: topic %s: %w", c.Topic, err)
	}
	crashed := false
	defer func() {
		if crashed {
			lock.Abandon()
		} else {
			lock.Release()
		}
	}()
	if err := unfinishedRuns(w, c.Topic); err != nil {
		return nil, err
	}
	k := &compactor{c: c, w: w, root: local.Root(), id: NewRunID(time.Now())}
	hours, err := k.hours()
	if err != nil {
		return nil, err
	}
	var done []CompactedHour
	for _, h := range hours {
		if err := context.Cause(ctx); err != nil {
			return done, err
		}
		select {
		case <-lock.Lost():
			return done, fmt.Errorf("compact: lost the lock on %s: %w", c.Topic, lock.Err())
		default:
		}
		ch, err := k.hour(h)
		var crash errCrash
		if errors.As(err, &crash) {
			crashed = true
		}
		if err != nil {
			return done, err
		}
		if ch != nil {
			done = append(done, *ch)
			c.Logger.Info("compacted hour", "dir", ch.Dir, "files", ch.Files, "after", ch.After, "records", ch.Records)
		}
	}
	return done, nil
}

// unfinishedRuns refuses a topic that a killed load run still holds: its
// files may yet be moved into an hour, or its hours marked.
func unfinishedRuns(w warehouse.FS, topic string) error {
	runs, err := w.ReadDir(runsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("compact: list %s: %w", runsDir, err)
	}
	for _, r := range runs {
		var info runInfo
		if err := readJSON(w, path.Join(runsDir, r.Name(), runInfoName), &info); err != nil {
			// A run of another topic may be starting: its topics are not
			// known yet, so it may be this one's.
			return fmt.Errorf("compact: cannot tell which topics load run %s holds (%v): try again once it has started, or run tributary load for %s, which finishes or discards it", r.Name(), err, topic)
		}
		if slices.Contains(info.Topics, topic) {
			return fmt.Errorf("compact: load run %s of %s is unfinished: run tributary load for the topic first, which finishes or discards it", r.Name(), topic)
		}
	}
	return nil
}

type compactor struct {
	c    CompactConfig
	w    warehouse.FS
	root string
	id   string
}

func (k *compactor) local(name string) string { return filepath.Join(k.root, filepath.FromSlash(name)) }

// hours lists the topic's partition directories to compact, deleting
// what killed compactions left.
func (k *compactor) hours() ([]string, error) {
	days, err := k.w.ReadDir(k.c.Topic)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("compact: list %s: %w", k.c.Topic, err)
	}
	var out []string
	for _, d := range days {
		if !d.IsDir() || !strings.HasPrefix(d.Name(), "dt=") {
			continue
		}
		day := path.Join(k.c.Topic, d.Name())
		hrs, err := k.w.ReadDir(day)
		if err != nil {
			return nil, fmt.Errorf("compact: list %s: %w", day, err)
		}
		for _, h := range hrs {
			dir := path.Join(day, h.Name())
			if strings.HasPrefix(h.Name(), "_hr=") && strings.Contains(h.Name(), ".compact-") {
				if err := os.RemoveAll(k.local(dir)); err != nil {
					return nil, fmt.Errorf("compact: removing %s, left by a killed compaction: %w", dir, err)
				}
				continue
			}
			start, err := warehouse.HourStart(dir)
			if err != nil || !h.IsDir() || warehouse.PartitionDir(k.c.Topic, start) != dir {
				continue
			}
			if len(k.c.Hours) > 0 {
				if slices.ContainsFunc(k.c.Hours, func(t time.Time) bool { return t.UTC().Truncate(time.Hour).Equal(start) }) {
					out = append(out, dir)
				}
				continue
			}
			if _, err := k.w.Stat(path.Join(dir, warehouse.SuccessName)); err == nil {
				out = append(out, dir)
			}
		}
	}
	return out, nil
}

// hour compacts one partition directory; nil when nothing is worth it.
func (k *compactor) hour(dir string) (*CompactedHour, error) {
	entries, err := os.ReadDir(k.local(dir))
	if err != nil {
		return nil, fmt.Errorf("compact: list %s: %w", dir, err)
	}
	bySchema := map[int][]string{}
	var others []string
	files := 0
	for _, e := range entries {
		id, ok := parquetSchemaID(e.Name())
		if e.IsDir() || !ok {
			others = append(others, e.Name())
			continue
		}
		bySchema[id] = append(bySchema[id], e.Name())
		files++
	}
	worth := false
	for _, names := range bySchema {
		worth = worth || len(names) >= k.c.MinFiles
	}
	if !worth {
		return nil, nil
	}
	newDir := path.Join(path.Dir(dir), "_"+path.Base(dir)+".compact-"+k.id)
	if err := os.MkdirAll(k.local(newDir), 0o755); err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	ch := &CompactedHour{Dir: dir, Files: files}
	ids := make([]int, 0, len(bySchema))
	for id := range bySchema {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		names := bySchema[id]
		if len(names) < k.c.MinFiles {
			others = append(others, names...)
			ch.After += len(names)
			continue
		}
		name := warehouse.CompactedFileName(k.c.Topic, k.id, id)
		n, err := k.merge(dir, names, path.Join(newDir, name))
		if err != nil {
			return nil, err
		}
		ch.Records += n
		ch.After++
	}
	// What is not merged (single files, _SUCCESS) is linked: the new
	// directory must hold the whole hour.
	for _, name := range others {
		if err := os.Link(k.local(path.Join(dir, name)), k.local(path.Join(newDir, name))); err != nil {
			return nil, fmt.Errorf("compact: %w", err)
		}
	}
	if err := syncDir(k.local(newDir)); err != nil {
		return nil, err
	}
	if err := k.fault(CompactBeforeSwap); err != nil {
		return nil, err
	}
	if err := unix.Renameat2(unix.AT_FDCWD, k.local(dir), unix.AT_FDCWD, k.local(newDir), unix.RENAME_EXCHANGE); err != nil {
		return nil, fmt.Errorf("compact: exchanging %s with its compacted copy: %w", dir, err)
	}
	if err := syncDir(k.local(path.Dir(dir))); err != nil {
		return nil, err
	}
	if err := k.fault(CompactAfterSwap); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(k.local(newDir)); err != nil { // now the old files
		return nil, fmt.Errorf("compact: removing the old files of %s: %w", dir, err)
	}
	return ch, nil
}

func (k *compactor) fault(p FaultPoint) error {
	if k.c.Fault == nil {
		return nil
	}
	if err := k.c.Fault(p); err != nil {
		return errCrash{err}
	}
	return nil
}

// mergeFlushBytes is how many bytes of input files go into one row group
// of a merged file.
const mergeFlushBytes = 64 << 20

// merge copies the rows of names (in dir, all of one schema) into one
// file, fsynced, and checks its row count.
func (k *compactor) merge(dir string, names []string, to string) (int64, error) {
	slices.Sort(names)
	out, err := os.Create(k.local(to))
	if err != nil {
		return 0, fmt.Errorf("compact: %w", err)
	}
	defer out.Close()
	var wr *parquet.GenericWriter[any]
	var want, pending int64
	for _, name := range names {
		b, err := os.ReadFile(k.local(path.Join(dir, name)))
		if err != nil {
			return 0, fmt.Errorf("compact: %w", err)
		}
		f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return 0, fmt.Errorf("compact: %s/%s: %w", dir, name, err)
		}
		if wr == nil {
			opts := []parquet.WriterOption{f.Schema(), parquetCodec(k.c.Codec), parquet.CreatedBy("tributary", "", "")}
			for _, key := range []string{"parquet.avro.schema", "tributary.topic", "tributary.schema.id", "tributary.schema.message"} {
				if v, ok := f.Lookup(key); ok {
					opts = append(opts, parquet.KeyValueMetadata(key, v))
				}
			}
			wr = parquet.NewGenericWriter[any](out, opts...)
		} else if !parquet.SameNodes(wr.Schema(), f.Schema()) {
			return 0, fmt.Errorf("compact: %s/%s: its Parquet schema differs from %s's, though its name gives the same schema id", dir, name, names[0])
		}
		for _, rg := range f.RowGroups() {
			rows := rg.Rows()
			n, err := parquet.CopyRows(wr, rows)
			rows.Close()
			if err != nil {
				return 0, fmt.Errorf("compact: copying %s/%s: %w", dir, name, err)
			}
			if n != rg.NumRows() {
				return 0, fmt.Errorf("compact: %s/%s: copied %d of %d rows", dir, name, n, rg.NumRows())
			}
		}
		want += f.NumRows()
		if pending += int64(len(b)); pending >= mergeFlushBytes {
			pending = 0
			if err := wr.Flush(); err != nil {
				return 0, fmt.Errorf("compact: writing %s: %w", to, err)
			}
		}
	}
	if err := wr.Close(); err != nil {
		return 0, fmt.Errorf("compact: writing %s: %w", to, err)
	}
	if err := out.Sync(); err != nil {
		return 0, fmt.Errorf("compact: syncing %s: %w", to, err)
	}
	st, err := out.Stat()
	if err != nil {
		return 0, err
	}
	f, err := parquet.OpenFile(out, st.Size())
	if err != nil || f.NumRows() != want {
		return 0, fmt.Errorf("compact: %s does not read back with the %d rows of its inputs: %v", to, want, err)
	}
	return want, nil
}

// parquetSchemaID reads the schema id out of a Parquet data file's name.
func parquetSchemaID(name string) (int, bool) {
	base, ok := strings.CutSuffix(name, ".parquet")
	if !ok || strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") {
		return 0, false
	}
	i := strings.LastIndex(base, ".s")
	if i < 0 {
		return 0, false
	}
	id, err := strconv.Atoi(base[i+2:])
	return id, err == nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("compact: syncing %s: %w", dir, err)
	}
	return nil
}
