package cluster

import (
	"context"
	"fmt"
	"maps"
)

// ClusterID is the id kept in the data directory's meta.properties.
func (s *Standalone) ClusterID() string { return s.clusterID }

// assignMissingTopicIDs gives topics from a registry written before topics
// had ids a new one, and saves it at once so the ids stay what clients
// first saw.
func (s *Standalone) assignMissingTopicIDs() error {
	changed := false
	for name, t := range s.topics {
		if t.ID.IsZero() {
			t.ID = NewTopicID()
			s.topics[name] = t
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := s.saveLocked(); err != nil {
		return fmt.Errorf("saving topic ids in the topic registry: %w", err)
	}
	return nil
}

func (s *Standalone) SetTopicConfigs(_ context.Context, name string, configs map[string]string) (Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.topics[name]
	if !ok {
		return Topic{}, ErrUnknownTopic
	}
	t := old
	t.Configs = maps.Clone(configs)
	if len(t.Configs) == 0 {
		t.Configs = nil
	}
	s.topics[name] = t
	if err := s.saveLocked(); err != nil {
		s.topics[name] = old
		return Topic{}, err
	}
	s.notifyLocked()
	return t, nil
}

func (s *Standalone) AddPartitions(_ context.Context, name string, total int32) (Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.topics[name]
	if !ok {
		return Topic{}, ErrUnknownTopic
	}
	leaders, err := grow(old, total, []Broker{s.self})
	if err != nil {
		return Topic{}, err
	}
	t := old
	t.Leaders = leaders
	s.topics[name] = t
	if err := s.saveLocked(); err != nil {
		s.topics[name] = old
		return Topic{}, err
	}
	s.notifyLocked()
	return t, nil
}

// grow returns t's leaders extended to total partitions: the existing ones
// stay where they are (their data is there) and the new ones continue the
// topic's round-robin over the brokers alive now.
func grow(t Topic, total int32, brokers []Broker) ([]int32, error) {
	if total <= t.Partitions() {
		return nil, fmt.Errorf("%w: topic %s has %d partitions; a topic can only grow, asked for %d", ErrPartitionCount, t.Name, t.Partitions(), total)
	}
	all, err := Spread(t.Name, total, brokers)
	if err != nil {
		return nil, err
	}
	return append(append([]int32(nil), t.Leaders...), all[t.Partitions():]...), nil
}
