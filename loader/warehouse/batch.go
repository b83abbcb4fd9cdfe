package warehouse

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
)

// A Batch is a view of a warehouse that makes names durable together
// instead of one at a time. Through it, a file's content is still durable
// once its Close returns nil, but the names that Create, Rename and
// MkdirAll made are durable only once Sync has returned nil.
//
// Why: in a local warehouse a name is durable once its directory and
// every directory above it have been fsynced, a chain of four to six
// fsyncs, each a round trip to the disk. A load writes dozens of files and
// renames each once; syncing the chain for each of them cost more than
// fetching the records. A batch syncs each directory once, all of them at
// the same time, right before the step that needs them durable (the
// commit, the end of the moves).
//
// On a warehouse whose names are durable when the call returns (HDFS: the
// NameNode logs every namespace change), a batch is the warehouse itself
// and Sync does nothing. CreateExclusive is never deferred: locks are
// built on it.
type Batch struct {
	FS
	pending *dirSet // nil when names are durable without Sync
	local   *Local
}

// dirSet is the directories whose entries changed since the last Sync.
type dirSet struct {
	mu   sync.Mutex
	dirs map[string]bool
}

func (s *dirSet) add(dirs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dirs == nil {
		s.dirs = map[string]bool{}
	}
	for _, d := range dirs {
		s.dirs[d] = true
	}
}

func (s *dirSet) take() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dirs
	s.dirs = nil
	return d
}

// NewBatch returns a batch over w.
func NewBatch(w FS) *Batch {
	l, ok := w.(*Local)
	if !ok {
		return &Batch{FS: w}
	}
	pending := &dirSet{}
	return &Batch{FS: &Local{root: l.root, files: l.files, deferred: pending}, pending: pending, local: l}
}

// syncParallel bounds the directory fsyncs a Sync has in flight.
const syncParallel = 8

// Sync makes durable every name created, renamed or removed by a rename
// through the batch since the last Sync: it fsyncs each directory that
// holds one, and every directory above those up to the root, once.
func (b *Batch) Sync() error {
	if b.pending == nil {
		return nil
	}
	changed := b.pending.take()
	all := map[string]bool{}
	root := strings.TrimSuffix(b.local.root, string(filepath.Separator)) + string(filepath.Separator)
	for dir := range changed {
		for !all[dir] {
			all[dir] = true
			if dir == b.local.root || !strings.HasPrefix(dir, root) {
				break
			}
			dir = filepath.Dir(dir)
		}
	}
	var g errgroup.Group
	g.SetLimit(syncParallel)
	for dir := range all {
		g.Go(func() error {
			if err := b.local.files.SyncDir(dir); err != nil {
				return fmt.Errorf("%s: syncing directory %s: %w", b.local, dir, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.pending.add(mapKeys(changed)...) // still not durable
		return err
	}
	return nil
}

func mapKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
