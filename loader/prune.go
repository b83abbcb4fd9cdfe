package loader

// Pruning: a warehouse's old commits go once newer ones hold their
// topics' state (commit.go writes them).

import (
	"errors"
	"io/fs"
	"slices"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// removeCommit prunes a commit: a legacy one is deleted, one named by its
// number alone replaced by an empty file (a tombstone) in one step, so
// that its number is never free again, not even for a moment (fence.go):
// HDFS's Create removes before it creates, so the tombstone is renamed
// over it.
func removeCommit(w warehouse.FS, c commitEntry) error {
	if c.legacy {
		return w.Remove(c.name)
	}
	if warehouse.WholeObjectWrites(w) {
		return warehouse.WriteFile(w, c.name, nil)
	}
	tmp := c.name + ".pruned"
	if err := warehouse.WriteFile(w, tmp, nil); err != nil {
		return err
	}
	return w.Rename(tmp, c.name)
}

// prune deletes committed manifests that are finished and superseded, for
// every topic they hold, by a newer manifest; it touches only manifests
// whose topics are all held. Offsets live on in the newest manifests.
// Once tombstones pile up, a floor replaces them (floor.go).
func (mv *mover) prune(held map[string]bool) error {
	commits, err := listCommits(mv.w)
	if err != nil {
		return err
	}
	newest := map[string]int64{} // topic → index in commits of its newest manifest
	manifests := make([]*Manifest, len(commits))
	for i := len(commits) - 1; i >= 0; i-- {
		m, err := readManifest(mv.w, commits[i].name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		manifests[i] = m
		for t := range m.Topics {
			if _, ok := newest[t]; !ok {
				newest[t] = int64(i)
			}
		}
	}
	for i, m := range manifests {
		if m == nil || !subset(m.topicNames(), held) {
			continue
		}
		if slices.ContainsFunc(m.topicNames(), func(t string) bool { return newest[t] == int64(i) }) {
			continue
		}
		if ok, err := warehouse.Exists(mv.w, runDir(m.Run)); err != nil || ok {
			continue // not finished yet
		}
		// Counts must be published first. The audit marker goes before
		// the manifest, so a crash between the two can only make the
		// counts be published again (a no-op).
		if m.Audit != nil {
			if ok, err := warehouse.Exists(mv.w, auditMarker(m.Run)); err != nil || !ok {
				continue
			}
		}
		if err := mv.w.Remove(auditMarker(m.Run)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := removeCommit(mv.w, commits[i]); err != nil {
			return err
		}
	}
	return raiseFloor(mv.w)
}
