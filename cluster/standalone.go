package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Standalone is the metadata of a one-broker cluster, kept in a JSON file in
// the broker's data directory: the embedded default, no ZooKeeper needed.
// Writes go to a temporary file that is fsynced and renamed over the old one,
// so a crash leaves either the old or the new view, never half of one.
type Standalone struct {
	self      Broker
	path      string
	clusterID string // from meta.properties (identity.go)

	mu      sync.Mutex
	topics  map[string]Topic
	changed chan struct{}
}

// OpenStandalone loads (or starts) the topic registry at dir/topics.json.
func OpenStandalone(dir string, self Broker) (*Standalone, error) {
	s := &Standalone{
		self:    self,
		path:    filepath.Join(dir, "topics.json"),
		topics:  map[string]Topic{},
		changed: make(chan struct{}),
	}
	data, err := os.ReadFile(s.path)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return nil, fmt.Errorf("reading topic registry: %w", err)
	default:
		var list []Topic
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("topic registry %s is not valid JSON (restore it from a backup or remove it to start empty): %w", s.path, err)
		}
		for _, t := range list {
			// The broker id may have changed between runs; a standalone
			// broker owns everything.
			for p := range t.Leaders {
				t.Leaders[p] = self.ID
			}
			s.topics[t.Name] = t
		}
	}
	if s.clusterID, err = loadOrCreateClusterID(dir); err != nil {
		return nil, err
	}
	if err := s.assignMissingTopicIDs(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Standalone) Self() Broker      { return s.self }
func (s *Standalone) Brokers() []Broker { return []Broker{s.self} }

func (s *Standalone) Topic(name string) (Topic, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.topics[name]
	return t, ok
}

func (s *Standalone) Topics() []Topic {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sortedLocked()
}

func (s *Standalone) sortedLocked() []Topic {
	list := make([]Topic, 0, len(s.topics))
	for _, t := range s.topics {
		list = append(list, t)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list
}

func (s *Standalone) CreateTopic(_ context.Context, name string, partitions int32, configs map[string]string) (Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.topics[name]; ok {
		return Topic{}, ErrTopicExists
	}
	leaders, err := Spread(name, partitions, []Broker{s.self})
	if err != nil {
		return Topic{}, err
	}
	t := Topic{Name: name, ID: NewTopicID(), Leaders: leaders, Configs: configs}
	s.topics[name] = t
	if err := s.saveLocked(); err != nil {
		delete(s.topics, name)
		return Topic{}, err
	}
	s.notifyLocked()
	return t, nil
}

func (s *Standalone) DeleteTopic(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.topics[name]
	if !ok {
		return ErrUnknownTopic
	}
	delete(s.topics, name)
	if err := s.saveLocked(); err != nil {
		s.topics[name] = t
		return err
	}
	s.notifyLocked()
	return nil
}

func (s *Standalone) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Standalone) Close() error { return nil }

func (s *Standalone) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Standalone) saveLocked() error {
	data, err := json.MarshalIndent(s.sortedLocked(), "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(s.path, data)
}
