package loader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// Snapshot expiry of an Iceberg table (ExpireSnapshots). Every load run
// and compaction adds a snapshot, and a snapshot keeps every file it
// names: without expiry a table's files (those compaction replaced
// included) and its metadata only grow.
//
// Which snapshots stay, whatever their age: the newest RetainLast of the
// current snapshot's ancestry (the current one always); every snapshot a
// branch or a tag other than an hour tag names; and the newest ancestor
// holding the loader's state (tributary.state), from which the next load
// resumes. Of the rest, those committed before Now-OlderThan expire.
//
// Hour tags (hour-YYYY-MM-DD-HH, the completed hours) do not keep a
// snapshot alive: one naming an expired snapshot of the current ancestry
// moves to the oldest retained snapshot after it, which holds every
// record the tagged one held (loads only append, and compaction replaces
// files by files of the same records); so a completed hour keeps its tag.
// One naming an expired snapshot outside that ancestry is dropped.
//
// A file is deleted only if some expired snapshot names it and no
// retained snapshot does: data files that a retained snapshot's manifests
// list as live (added or existing; a deleted entry is a tombstone, not a
// use), and the manifests and manifest lists of retained snapshots, stay.
// Only files inside the table's directory are ever deleted.
//
// Crash safety: the files to delete are written to a plan
// (metadata/expire-<id>.plan.json) before the version without the expired
// snapshots is committed (one exclusive create, as every commit); files
// are deleted only after that. The next expiry first finishes any plan it
// finds, deleting only those of its files that no snapshot of the table's
// current version names: if the commit never happened, they are all still
// named and nothing goes. Version files (vN.metadata.json) are never
// deleted: a version's number must stay taken, or a writer paused since
// it could create it again.

// Expiry's fault points.
const (
	// ExpireBeforeCommit: the plan is written; the new version is not.
	ExpireBeforeCommit FaultPoint = "expire-before-commit"
	// ExpireAfterCommit: the version without the expired snapshots is
	// committed; no file is deleted yet.
	ExpireAfterCommit FaultPoint = "expire-after-commit"
	// ExpireMidDelete: half the files are deleted.
	ExpireMidDelete FaultPoint = "expire-mid-delete"
)

// ExpireFaultPoints lists expiry's crash points.
var ExpireFaultPoints = []FaultPoint{ExpireBeforeCommit, ExpireAfterCommit, ExpireMidDelete}

// Iceberg's defaults: history.expire.max-snapshot-age-ms (5 days) and
// history.expire.min-snapshots-to-keep (1).
const (
	DefaultExpireOlderThan  = 5 * 24 * time.Hour
	DefaultExpireRetainLast = 1
)

// ExpirePolicy is which snapshots a load expires after each committed run
// (Config.Expire), by ExpireSnapshots' rules.
type ExpirePolicy struct {
	// OlderThan: snapshots committed longer ago may expire; zero: any.
	OlderThan time.Duration `json:"older_than"`
	// RetainLast: the newest this many stay. Default (and at least) 1.
	RetainLast int `json:"retain_last"`
}

// expireTables expires the old snapshots of the tables run r committed
// to, under the topic locks the run still holds. A failure is reported
// in the summary and the log: the run is committed, and the next run
// expires what this one did not.
func (r *run) expireTables(ctx context.Context, m *Manifest) {
	if r.cfg.Expire == nil {
		return
	}
	for _, t := range slices.Sorted(maps.Keys(m.Tables)) {
		x := &expiry{c: ExpireConfig{Table: r.cfg.Table, Topic: t, OlderThan: r.cfg.Expire.OlderThan,
			RetainLast: max(r.cfg.Expire.RetainLast, DefaultExpireRetainLast), Logger: r.log, Now: r.cfg.Now},
			w: r.batch, cat: r.cat, dir: m.Tables[t].Dir, id: r.id, root: iceRoot(r.w) + "/"}
		err := unfinishedRuns(r.w, t)
		var out *Expired
		if err == nil {
			out, err = x.run(ctx)
		}
		if out != nil {
			r.sum.ExpiredSnapshots += len(out.Snapshots)
		}
		if err != nil {
			r.sum.ExpireError = err.Error()
			r.log.Warn("expiring the table's old snapshots; the next run tries again", "table", x.dir, "err", err)
		}
	}
}

// ExpireConfig says which snapshots of a topic's table to expire.
type ExpireConfig struct {
	// Warehouse is the warehouse URL, opened with WarehouseOptions; or FS
	// an open one.
	Warehouse        string
	WarehouseOptions warehouse.Options
	FS               warehouse.FS
	// Table is the namespace (Config.Table) and Topic the topic whose
	// table <Table>/<Topic> is expired.
	Table, Topic string
	// Catalog is the table's catalog (Config.Catalog).
	Catalog CatalogConfig
	// OlderThan: snapshots committed longer ago than this may expire;
	// zero: any (tributary expire's default is DefaultExpireOlderThan).
	OlderThan time.Duration
	// RetainLast is how many of the newest snapshots of the current
	// ancestry stay whatever their age. Default (and at least) 1.
	RetainLast int
	// LockTTL is the topic lock's lease. Default DefaultLockTTL.
	LockTTL time.Duration
	Logger  *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Fault, for crash tests, is called at ExpireFaultPoints; an error
	// stops the expiry there as a kill would.
	Fault func(FaultPoint) error
}

// Expired is what an expiry did.
type Expired struct {
	Table     string   `json:"table"`
	Snapshots []int64  `json:"expired_snapshots"`
	Retained  int      `json:"retained_snapshots"`
	DataFiles int      `json:"deleted_data_files"`
	MetaFiles int      `json:"deleted_manifests"` // manifests and manifest lists
	MovedTags []string `json:"moved_tags,omitempty"`
	// Finished counts the files that plans left by killed expiries named
	// and this one removed (some may have been gone already).
	Finished int `json:"finished_from_earlier,omitempty"`
}

// ExpireSnapshots expires old snapshots of a topic's table and deletes
// the files only they named, under the topic's lock.
func ExpireSnapshots(ctx context.Context, c ExpireConfig) (*Expired, error) {
	if c.Topic == "" {
		return nil, errors.New("expire: no topic given")
	}
	if err := CheckTableName(c.Table); err != nil {
		return nil, fmt.Errorf("expire: %w", err)
	}
	c.RetainLast = max(c.RetainLast, DefaultExpireRetainLast)
	if c.LockTTL <= 0 {
		c.LockTTL = DefaultLockTTL
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	w := c.FS
	if w == nil {
		var err error
		if w, err = warehouse.OpenWith(c.Warehouse, c.WarehouseOptions); err != nil {
			return nil, fmt.Errorf("expire: %w", err)
		}
		defer w.Close()
	}
	lock, err := warehouse.AcquireLock(w, topicLockName(c.Topic), "tributary expire", c.LockTTL)
	if err != nil {
		return nil, fmt.Errorf("expire: topic %s: %w", c.Topic, err)
	}
	if err := unfinishedRuns(w, c.Topic); err != nil {
		lock.Release()
		return nil, err
	}
	x := &expiry{c: c, w: warehouse.NewBatch(w), dir: path.Join(c.Table, c.Topic), id: NewRunID(c.Now()), root: iceRoot(w) + "/"}
	if x.cat, err = c.Catalog.open(x.w); err != nil {
		lock.Release()
		return nil, fmt.Errorf("expire: %w", err)
	}
	out, err := x.run(ctx)
	if errors.As(err, new(errCrash)) {
		lock.Abandon()
	} else {
		lock.Release()
	}
	return out, err
}

type expiry struct {
	c    ExpireConfig
	w    *warehouse.Batch
	cat  iceCatalog
	dir  string // the table's
	id   string
	root string // iceRoot + "/"
}

// expirePlan is what a plan file holds.
type expirePlan struct {
	ID      string   `json:"id"`
	Version int      `json:"version"` // the version that expires the snapshots
	Files   []string `json:"files"`   // warehouse paths, data files first
}

const expirePlanSuffix = ".plan.json"

func (x *expiry) fault(p FaultPoint) error {
	if x.c.Fault == nil {
		return nil
	}
	if err := x.c.Fault(p); err != nil {
		return errCrash{err}
	}
	return nil
}

func (x *expiry) run(ctx context.Context) (*Expired, error) {
	out := &Expired{Table: x.dir}
	n, err := x.finishPlans()
	out.Finished = n
	if err != nil {
		return out, err
	}
	md, err := x.cat.load(x.dir)
	if err != nil {
		return out, fmt.Errorf("expire: %w", err)
	}
	cur := md.current()
	if cur == nil {
		return out, nil
	}
	keep, moved := x.choose(md)
	out.Retained = len(keep)
	if len(keep) == len(md.Snapshots) {
		return out, nil
	}
	used, err := x.named(md, keep, true)
	if err != nil {
		return out, err
	}
	var expired []int64
	gone := map[int64]bool{}
	for _, s := range md.Snapshots {
		if !keep[s.SnapshotID] {
			expired = append(expired, s.SnapshotID)
			gone[s.SnapshotID] = true
		}
	}
	named, err := x.named(md, gone, false)
	if err != nil {
		return out, err
	}
	plan := expirePlan{ID: x.id, Version: md.version + 1}
	for _, f := range named.order {
		if !used.set[f] {
			plan.Files = append(plan.Files, f)
		}
	}
	planName := path.Join(x.dir, iceMetadataDir, "expire-"+x.id+expirePlanSuffix)
	if err := writeJSON(x.w, planName, plan); err != nil {
		return out, fmt.Errorf("expire: writing its plan: %w", err)
	}
	if err := x.w.Sync(); err != nil {
		return out, err
	}
	if err := x.fault(ExpireBeforeCommit); err != nil {
		return out, err
	}
	if err := context.Cause(ctx); err != nil {
		x.w.Remove(planName)
		return out, err
	}
	next := md.clone()
	next.Snapshots = slices.DeleteFunc(next.Snapshots, func(s iceSnapshot) bool { return gone[s.SnapshotID] })
	next.SnapshotLog = slices.DeleteFunc(next.SnapshotLog, func(e iceLogEntry) bool { return gone[e.SnapshotID] })
	for name, ref := range md.Refs {
		if !gone[ref.SnapshotID] {
			continue
		}
		if to, ok := moved[name]; ok {
			next.Refs[name] = iceRef{SnapshotID: to, Type: "tag"}
			out.MovedTags = append(out.MovedTags, name)
		} else {
			delete(next.Refs, name)
		}
	}
	sort.Strings(out.MovedTags)
	next.LastUpdatedMs = x.c.Now().UnixMilli()
	next.MetadataLog = append(next.MetadataLog, iceLogEntry{TimestampMs: md.LastUpdatedMs, MetadataFile: x.root + md.file})
	if err := x.cat.commit(x.dir, md, next, "expire-"+x.id, nil); err != nil {
		x.w.Remove(planName) // refused: nothing expired, nothing to delete
		return out, fmt.Errorf("expire: %w", err)
	}
	out.Snapshots = expired
	x.c.Logger.Info("expired snapshots", "table", x.dir, "expired", len(expired), "retained", len(keep), "files", len(plan.Files))
	if err := x.fault(ExpireAfterCommit); err != nil {
		return out, err
	}
	for i, f := range plan.Files {
		if i == len(plan.Files)/2 {
			if err := x.fault(ExpireMidDelete); err != nil {
				return out, err
			}
		}
		if err := x.w.Remove(f); err != nil {
			return out, fmt.Errorf("expire: deleting %s (the next expiry deletes it): %w", f, err)
		}
		if strings.HasSuffix(f, ".parquet") {
			out.DataFiles++
		} else {
			out.MetaFiles++
		}
	}
	if err := x.w.Remove(planName); err != nil {
		return out, err
	}
	return out, x.w.Sync()
}

// choose returns the snapshots that stay, and where each hour tag naming
// a snapshot that goes moves to.
func (x *expiry) choose(md *iceMetadata) (keep map[int64]bool, moved map[string]int64) {
	byID := map[int64]*iceSnapshot{}
	for i := range md.Snapshots {
		byID[md.Snapshots[i].SnapshotID] = &md.Snapshots[i]
	}
	var ancestry []int64 // newest first
	for s, steps := md.current(), 0; s != nil && steps <= len(md.Snapshots); steps++ {
		ancestry = append(ancestry, s.SnapshotID)
		if s.ParentSnapshotID == nil {
			break
		}
		s = byID[*s.ParentSnapshotID]
	}
	keep = map[int64]bool{}
	for i, id := range ancestry {
		if i < x.c.RetainLast {
			keep[id] = true
		}
	}
	for _, id := range ancestry {
		if byID[id].Summary[iceStateKey] != "" {
			keep[id] = true // where the next load resumes
			break
		}
	}
	cutoff := x.c.Now().Add(-x.c.OlderThan).UnixMilli()
	for _, s := range md.Snapshots {
		if s.TimestampMs >= cutoff {
			keep[s.SnapshotID] = true
		}
	}
	for name, ref := range md.Refs {
		if !strings.HasPrefix(name, iceHourTagPrefix) || ref.Type != "tag" {
			keep[ref.SnapshotID] = true
		}
	}
	moved = map[string]int64{}
	for name, ref := range md.Refs {
		if keep[ref.SnapshotID] {
			continue
		}
		at := slices.Index(ancestry, ref.SnapshotID)
		if at < 0 {
			continue // not in the current ancestry: dropped
		}
		for i := at - 1; i >= 0; i-- {
			if keep[ancestry[i]] {
				moved[name] = ancestry[i] // the oldest retained one after it
				break
			}
		}
	}
	return keep, moved
}
