package loader

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// The files of an expiry: which ones snapshots name, and the deletions a
// killed expiry left in its plan (iceberg_expire.go).

// fileSet is a set of warehouse paths with their first-seen order.
type fileSet struct {
	set   map[string]bool
	order []string
}

func (s *fileSet) add(p string) {
	if !s.set[p] {
		s.set[p] = true
		s.order = append(s.order, p)
	}
}

// named returns the files the snapshots in ids name inside the table's
// directory: their manifest lists, manifests and data files (only live
// entries when liveOnly; every entry otherwise). Data files come first in
// the order, so that a deletion cut short leaves manifests that still
// lead to what is left.
func (x *expiry) named(md *iceMetadata, ids map[int64]bool, liveOnly bool) (*fileSet, error) {
	data, meta := &fileSet{set: map[string]bool{}}, &fileSet{set: map[string]bool{}}
	inTable := func(p string) (string, bool) {
		rel, ok := strings.CutPrefix(p, x.root)
		return rel, ok && strings.HasPrefix(rel, x.dir+"/")
	}
	seen := map[string]bool{}
	for _, s := range md.Snapshots {
		if !ids[s.SnapshotID] {
			continue
		}
		list, ok := inTable(s.ManifestList)
		if !ok {
			continue
		}
		meta.add(list)
		mfs, err := readIceAvro(x.w, list, "manifest_path")
		if errors.Is(err, fs.ErrNotExist) && !liveOnly {
			continue // an expired snapshot's list already gone: nothing more to learn
		}
		if err != nil {
			return nil, fmt.Errorf("expire: table %s: snapshot %d: %w", x.dir, s.SnapshotID, err)
		}
		for _, e := range mfs {
			mpath, _ := e.(map[string]any)["manifest_path"].(string)
			rel, ok := inTable(mpath)
			if !ok || seen[rel] {
				continue
			}
			seen[rel] = true
			meta.add(rel)
			entries, err := readIceAvro(x.w, rel, "data_file")
			if errors.Is(err, fs.ErrNotExist) && !liveOnly {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("expire: table %s: %w", x.dir, err)
			}
			for _, v := range entries {
				en, _ := v.(map[string]any)
				if st, _ := en["status"].(int32); liveOnly && st == iceStatusDeleted {
					continue
				}
				df, _ := en["data_file"].(map[string]any)
				p, _ := df["file_path"].(string)
				if rel, ok := inTable(p); ok {
					data.add(rel)
				}
			}
		}
	}
	for _, p := range meta.order {
		data.add(p)
	}
	return data, nil
}

// finishPlans completes the deletions of expiries killed after writing
// their plans: a file is deleted only if no snapshot of the table's
// current version names it. It returns how many files it deleted.
func (x *expiry) finishPlans() (int, error) {
	metaDir := path.Join(x.dir, iceMetadataDir)
	infos, err := x.w.ReadDir(metaDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("expire: %w", err)
	}
	deleted := 0
	for _, fi := range infos {
		if !strings.HasPrefix(fi.Name(), "expire-") || !strings.HasSuffix(fi.Name(), expirePlanSuffix) {
			continue
		}
		name := path.Join(metaDir, fi.Name())
		var plan expirePlan
		if err := readJSON(x.w, name, &plan); err != nil {
			if !isSyntaxError(err) {
				return deleted, fmt.Errorf("expire: %s: %w", name, err)
			}
			// Torn while written: its expiry never committed.
		} else if len(plan.Files) > 0 {
			md, err := x.cat.load(x.dir)
			if err != nil {
				return deleted, fmt.Errorf("expire: %w", err)
			}
			all := map[int64]bool{}
			for _, s := range md.Snapshots {
				all[s.SnapshotID] = true
			}
			used, err := x.named(md, all, true)
			if err != nil {
				return deleted, err
			}
			x.c.Logger.Warn("finishing the deletions of an expiry that was cut short", "table", x.dir, "plan", plan.ID)
			for _, f := range plan.Files {
				if used.set[f] || !strings.HasPrefix(f, x.dir+"/") {
					continue
				}
				if err := x.w.Remove(f); err != nil {
					return deleted, fmt.Errorf("expire: deleting %s: %w", f, err)
				}
				deleted++
			}
		}
		if err := x.w.Remove(name); err != nil {
			return deleted, err
		}
	}
	return deleted, x.w.Sync()
}
