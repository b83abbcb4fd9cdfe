package brokerconfig

// Where dynamic broker configs persist: DataDir/broker-configs.json for a
// standalone broker (replaced atomically), ZooKeeper's
// /config/brokers/<default> and /config/brokers/<id> for a cluster
// (cluster.ZKBrokerConfigs), which every broker watches so that a change
// through one applies on all.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"sync"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Store is where dynamic broker configs persist: NewFile or NewZooKeeper.
type Store interface {
	// Load reads the cluster-wide default configs and this broker's own.
	Load() (def, own map[string]string, err error)
	// Update replaces the default configs (own false) or this broker's
	// own with what change makes of a copy of them, and returns the
	// result; an error from change stores nothing.
	Update(own bool, change func(map[string]string) (map[string]string, error)) (map[string]string, error)
}

// fileStore is the standalone store. Kept by broker id, so that a
// data directory moved under another --node-id does not give the new
// broker the old one's settings.
type fileStore struct {
	path string
	self int32
	mu   sync.Mutex // serializes updates, which share the temporary file
}

type brokerConfigFileData struct {
	Version int                          `json:"version"`
	Default map[string]string            `json:"default,omitempty"`
	Brokers map[string]map[string]string `json:"brokers,omitempty"`
}

func (f *fileStore) read() (brokerConfigFileData, error) {
	var d brokerConfigFileData
	data, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return brokerConfigFileData{Version: 1}, nil
	}
	if err != nil {
		return d, fmt.Errorf("dynamic broker configs: %w", err)
	}
	if err := json.Unmarshal(data, &d); err != nil || d.Version != 1 {
		return d, fmt.Errorf("dynamic broker configs in %s are unreadable (%v); fix or remove the file (its settings then go back to the flags)", f.path, err)
	}
	return d, nil
}

func (f *fileStore) Load() (map[string]string, map[string]string, error) {
	d, err := f.read()
	return d.Default, d.Brokers[strconv.Itoa(int(f.self))], err
}

func (f *fileStore) Update(own bool, change func(map[string]string) (map[string]string, error)) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.read()
	if err != nil {
		return nil, err
	}
	id := strconv.Itoa(int(f.self))
	cur := d.Default
	if own {
		cur = d.Brokers[id]
	}
	next, err := change(maps.Clone(cur))
	if err != nil {
		return nil, err
	}
	switch {
	case !own:
		d.Default = next
	case len(next) == 0:
		delete(d.Brokers, id)
	default:
		if d.Brokers == nil {
			d.Brokers = map[string]map[string]string{}
		}
		d.Brokers[id] = next
	}
	data, _ := json.MarshalIndent(d, "", "  ")
	if err := atomicfile.Write(f.path, data); err != nil {
		return nil, fmt.Errorf("dynamic broker configs: %w", err)
	}
	return next, nil
}

// zkStore is the cluster store.
type zkStore struct {
	zk   *cluster.ZKBrokerConfigs
	self int32
}

func (z zkStore) entity(own bool) string {
	if own {
		return cluster.BrokerEntity(z.self)
	}
	return cluster.DefaultBrokerEntity
}

func (z zkStore) Load() (map[string]string, map[string]string, error) {
	def, err := z.zk.Load(z.entity(false))
	if err != nil {
		return nil, nil, err
	}
	own, err := z.zk.Load(z.entity(true))
	return def, own, err
}

func (z zkStore) Update(own bool, change func(map[string]string) (map[string]string, error)) (map[string]string, error) {
	return z.zk.Update(z.entity(own), change)
}

// watch reloads the configs whenever either node changes, until stop.
func (z zkStore) watch(stop <-chan struct{}, changed func()) {
	z.zk.Watch(stop, changed, z.entity(false), z.entity(true))
}

// NewFile is a standalone broker's store, the file at path, keeping the
// configs of broker self.
func NewFile(path string, self int32) Store { return &fileStore{path: path, self: self} }

// NewZooKeeper is a cluster's store, for broker self.
func NewZooKeeper(zk *cluster.ZKBrokerConfigs, self int32) Store { return zkStore{zk: zk, self: self} }

// Follow calls changed whenever another broker changes the configs of a
// cluster's store, until stop closes. It returns at once for a standalone
// store.
func Follow(s Store, stop <-chan struct{}, changed func()) {
	if zs, ok := s.(zkStore); ok {
		zs.watch(stop, changed)
	}
}
