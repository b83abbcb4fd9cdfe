package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// ClusterID is the id kept in the data directory's meta.properties.
func (s *Standalone) ClusterID() string { return s.clusterID }

// assignMissingTopicIDs gives topics from a registry written before topics
// had ids a new one, and saves it at once (at open, before anyone reads) so
// the ids stay what clients first saw.
func (s *Standalone) assignMissingTopicIDs() error {
	changed := false
	for name, t := range s.want {
		if t.ID.IsZero() {
			t.ID = NewTopicID()
			s.want[name] = t
			changed = true
		}
	}
	if !changed {
		return nil
	}
	data, err := json.Marshal(newView(s.want).sorted)
	if err == nil {
		err = atomicfile.Write(s.path, data)
	}
	if err != nil {
		return fmt.Errorf("saving topic ids in the topic registry: %w", err)
	}
	return nil
}

func (s *Standalone) SetTopicConfigs(_ context.Context, name string, configs map[string]string) (Topic, error) {
	return s.update(name, func(t Topic) (Topic, error) {
		t.Configs = maps.Clone(configs)
		if len(t.Configs) == 0 {
			t.Configs = nil
		}
		return t, nil
	})
}

func (s *Standalone) AddPartitions(_ context.Context, name string, total int32) (Topic, error) {
	return s.update(name, func(t Topic) (Topic, error) {
		leaders, err := grow(t, total, []Broker{s.self})
		if err != nil {
			return Topic{}, err
		}
		if _, parts := s.countsLocked(); s.maxParts > 0 && parts+len(leaders)-len(t.Leaders) > s.maxParts {
			return Topic{}, fmt.Errorf("%w: the broker holds %d partitions, %d more would pass the limit of %d",
				ErrTooManyPartitions, parts, len(leaders)-len(t.Leaders), s.maxParts)
		}
		t.Leaders = leaders
		return t, nil
	})
}

// update replaces topic name by what fn makes of it (fn runs with mu held)
// and returns once the change is durable, like CreateTopic.
func (s *Standalone) update(name string, fn func(Topic) (Topic, error)) (Topic, error) {
	s.mu.Lock()
	old, ok := s.want[name]
	if !ok {
		s.mu.Unlock()
		return Topic{}, ErrUnknownTopic
	}
	t, err := fn(old)
	if err != nil {
		s.mu.Unlock()
		return Topic{}, err
	}
	s.want[name] = t
	c := &change{name: name, topic: &t, prev: &old, done: make(chan error, 1)}
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	if err := s.commit(c); err != nil {
		return Topic{}, err
	}
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
