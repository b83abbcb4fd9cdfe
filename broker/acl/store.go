package acl

// Where ACLs persist: DataDir/acls.json for a standalone broker (replaced
// atomically), one ZooKeeper node <chroot>/config/acls for a cluster,
// changed by compare-and-set and watched by every broker, so an ACL
// created through one broker applies on all of them within a watch event.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Store is where ACLs persist: NewFile or NewZooKeeper.
type Store interface {
	load() ([]ACL, error)
	// update applies fn to the current ACLs and persists the result.
	update(fn func([]ACL) []ACL) ([]ACL, error)
}

// NewFile is a standalone broker's store, the file at path.
func NewFile(path string) Store { return &aclFile{path: path} }

// aclFile keeps the ACLs in one JSON file. Updates are serialized: each
// reads, changes and replaces the whole file, so two CreateAcls served at
// once from different connections would otherwise lose one of them.
type aclFile struct {
	path string
	mu   sync.Mutex // held across an update's read and replace
}

func (f *aclFile) load() ([]ACL, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ACLs: %w", err)
	}
	var acls []ACL
	if err := json.Unmarshal(data, &acls); err != nil {
		return nil, fmt.Errorf("ACLs in %s: %w", f.path, err)
	}
	return acls, nil
}

func (f *aclFile) update(fn func([]ACL) []ACL) ([]ACL, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	acls, err := f.load()
	if err != nil {
		return nil, err
	}
	acls = fn(acls)
	data, _ := json.MarshalIndent(acls, "", "  ")
	if err := atomicfile.Write(f.path, data); err != nil {
		return nil, fmt.Errorf("ACLs: %w", err)
	}
	return acls, nil
}

type zkStore struct{ s *cluster.ZKSession }

func (z zkStore) path() string { return z.s.Paths.ACLs() }

func (z zkStore) read() ([]ACL, int32, error) {
	data, st, err := z.s.Conn.Get(z.path())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, -1, fmt.Errorf("ACLs in ZooKeeper: %w", err)
	}
	var acls []ACL
	if err := json.Unmarshal(data, &acls); err != nil {
		return nil, -1, fmt.Errorf("ACLs in ZooKeeper (%s): %w", z.path(), err)
	}
	return acls, st.Version, nil
}

func (z zkStore) load() ([]ACL, error) {
	acls, _, err := z.read()
	return acls, err
}

func (z zkStore) update(fn func([]ACL) []ACL) ([]ACL, error) {
	if err := z.s.EnsurePath(z.s.Paths.Config()); err != nil {
		return nil, fmt.Errorf("ACLs in ZooKeeper: %w", err)
	}
	for {
		acls, version, err := z.read()
		if err != nil {
			return nil, err
		}
		acls = fn(acls)
		data, _ := json.Marshal(acls)
		retry, err := cluster.WriteNodeCAS(z.s, z.path(), data, version)
		if retry {
			continue // changed under us: read again
		}
		if err != nil {
			return nil, fmt.Errorf("ACLs in ZooKeeper: %w", err)
		}
		return acls, nil
	}
}

// watch calls changed whenever the ACL node changes, until stop closes.
func (z zkStore) watch(stop <-chan struct{}, changed func()) {
	cluster.WatchNode(z.s, z.path(), stop, changed)
}

// Follow keeps a cluster's ACLs current as other brokers change them,
// until stop closes; failed hears a read that failed (the last ACLs read
// stay in force). It returns at once for a standalone store.
func (z *Authorizer) Follow(stop <-chan struct{}, failed func(error)) {
	zs, ok := z.store.(zkStore)
	if !ok {
		return
	}
	zs.watch(stop, func() {
		if err := z.Refresh(); err != nil {
			failed(err)
		}
	})
}

// NewZooKeeper is a cluster's store, one node every broker watches.
func NewZooKeeper(s *cluster.ZKSession) Store { return zkStore{s: s} }
