package group

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/atomicfile"
)

// DirStore keeps each group's committed offsets in one JSON file of a
// directory (a standalone broker's DataDir/groups). Every commit rewrites the
// group's file atomically (temporary file, fsync, rename, fsync of the
// directory), so a crash leaves either the offsets before the commit or
// after it. All offsets are also held in memory: reads never touch the disk.
type DirStore struct {
	dir string

	mu     sync.Mutex
	groups map[string]*dirGroup
}

// dirGroup serializes the commits of one group so that the file always ends
// with the newest offsets, without making groups wait for each other.
type dirGroup struct {
	mu      sync.Mutex
	offsets map[TopicPartition]Offset
	deleted bool // set by Delete: a commit racing it starts a new group
}

// dirFile is the content of one group's file. The group's name is inside
// because a file name cannot hold every group id a client may choose.
type dirFile struct {
	Group   string          `json:"group"`
	Offsets []dirFileOffset `json:"offsets"`
}

type dirFileOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata,omitempty"`
}

// OpenDirStore loads every group file of dir, creating dir if needed. A file
// that cannot be read is an error naming it rather than a silent loss of the
// group's position.
func OpenDirStore(dir string) (*DirStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("group offsets directory: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("group offsets directory: %w", err)
	}
	s := &DirStore{dir: dir, groups: map[string]*dirGroup{}}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue // includes .tmp files of a write cut by a crash
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading committed offsets: %w", err)
		}
		var f dirFile
		if err := json.Unmarshal(data, &f); err != nil {
			return nil, fmt.Errorf("committed offsets file %s is not valid JSON (%v); move it away to let the group start over from its reset policy", path, err)
		}
		if dirFileName(f.Group) != e.Name() {
			return nil, fmt.Errorf("committed offsets file %s holds group %q, whose file would be %s; move it away or rename it", path, f.Group, dirFileName(f.Group))
		}
		offsets := make(map[TopicPartition]Offset, len(f.Offsets))
		for _, o := range f.Offsets {
			offsets[TopicPartition{o.Topic, o.Partition}] = Offset{Offset: o.Offset, Metadata: o.Metadata}
		}
		s.groups[f.Group] = &dirGroup{offsets: offsets}
	}
	return s, nil
}

// dirFileName is the group's name when that is a safe file name, and a hash
// of it otherwise; '~' never appears in a safe name, so the two cannot clash.
func dirFileName(group string) string {
	if len(group) <= 200 && cluster.ValidateName("group", group) == nil {
		return group + ".json"
	}
	sum := sha256.Sum256([]byte(group))
	return "~" + hex.EncodeToString(sum[:16]) + ".json"
}

func (s *DirStore) group(name string, create bool) *dirGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[name]
	if g == nil && create {
		g = &dirGroup{offsets: map[TopicPartition]Offset{}}
		s.groups[name] = g
	}
	return g
}

func (s *DirStore) Load(group string) (map[TopicPartition]Offset, error) {
	out := map[TopicPartition]Offset{}
	g := s.group(group, false)
	if g == nil {
		return out, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for tp, o := range g.offsets {
		out[tp] = o
	}
	return out, nil
}

func (s *DirStore) Commit(group string, offsets map[TopicPartition]Offset) error {
	g := s.group(group, true)
	g.mu.Lock()
	for g.deleted {
		g.mu.Unlock()
		g = s.group(group, true)
		g.mu.Lock()
	}
	defer g.mu.Unlock()
	next := make(map[TopicPartition]Offset, len(g.offsets)+len(offsets))
	for tp, o := range g.offsets {
		next[tp] = o
	}
	for tp, o := range offsets {
		next[tp] = o
	}
	if err := s.writeLocked(group, next); err != nil {
		return err
	}
	g.offsets = next
	return nil
}

// writeLocked replaces the group's file with offsets. Call with the
// group's mu held.
func (s *DirStore) writeLocked(group string, offsets map[TopicPartition]Offset) error {
	f := dirFile{Group: group}
	for tp, o := range offsets {
		f.Offsets = append(f.Offsets, dirFileOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: o.Offset, Metadata: o.Metadata})
	}
	sort.Slice(f.Offsets, func(i, j int) bool {
		a, b := f.Offsets[i], f.Offsets[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(s.dir, dirFileName(group)), data); err != nil {
		return fmt.Errorf("writing committed offsets of group %q: %w", group, err)
	}
	return nil
}

func (s *DirStore) Delete(group string) error {
	s.mu.Lock()
	g := s.groups[group]
	delete(s.groups, group)
	s.mu.Unlock()
	if g == nil {
		return ErrNoGroup
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deleted = true
	err := os.Remove(filepath.Join(s.dir, dirFileName(group)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("deleting committed offsets of group %q: %w", group, err)
	}
	return nil
}

func (s *DirStore) Groups() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := make(map[string]bool, len(s.groups))
	for name := range s.groups {
		set[name] = true
	}
	return sortedNames(set), nil
}
