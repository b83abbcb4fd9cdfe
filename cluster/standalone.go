package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Standalone is the metadata of a one-broker cluster, kept in a JSON file in
// the broker's data directory: the embedded default, no ZooKeeper needed.
//
// Lookups (Topic, Topics) read an immutable snapshot through one atomic
// load: they never wait for a write, so produce and fetch to existing topics
// go on while topics are being created. A change becomes visible only once
// it is durable. Writes replace the whole file (a temporary file fsynced and
// renamed over the old one, so a crash leaves either the old or the new
// view), outside every lock the readers use, and one write covers every
// change queued while the previous one was in progress (group commit):
// a storm of auto-created topics costs one fsync per batch of topics, not
// one per topic, and each creator waits only until its own topic is durable.
type Standalone struct {
	self      Broker
	path      string
	clusterID string // from meta.properties (identity.go)

	view atomic.Pointer[standaloneView] // durable state, what readers see

	mu        sync.Mutex
	want      map[string]Topic // durable state plus every queued change
	queue     []*change        // changes not yet taken by a writer
	changed   chan struct{}
	maxTopics int // 0: no limit
	maxParts  int // 0: no limit

	writeMu sync.Mutex // one writer at a time; never held by readers
}

// standaloneView is one durable state of the registry. It is never
// modified after it is published.
type standaloneView struct {
	byName map[string]Topic
	sorted []Topic
}

// change is one queued create (topic set, prev nil), update (both set) or
// delete (topic nil), answered on done once written (nil) or refused by
// the write.
type change struct {
	name  string
	topic *Topic
	prev  *Topic // the topic it replaced or removed, restored if the write fails
	done  chan error
}

// syncHook, when set by a test, runs inside every registry write just
// before the file is written and fsynced: the point a slow disk stalls.
var syncHook func()

// OpenStandalone loads (or starts) the topic registry at dir/topics.json.
func OpenStandalone(dir string, self Broker) (*Standalone, error) {
	s := &Standalone{
		self:    self,
		path:    filepath.Join(dir, "topics.json"),
		want:    map[string]Topic{},
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
			s.want[t.Name] = t
		}
	}
	if s.clusterID, err = loadOrCreateClusterID(dir); err != nil {
		return nil, err
	}
	if err := s.assignMissingTopicIDs(); err != nil {
		return nil, err
	}
	s.view.Store(newView(s.want))
	return s, nil
}

func newView(topics map[string]Topic) *standaloneView {
	v := &standaloneView{byName: make(map[string]Topic, len(topics)), sorted: make([]Topic, 0, len(topics))}
	for name, t := range topics {
		v.byName[name] = t
		v.sorted = append(v.sorted, t)
	}
	sort.Slice(v.sorted, func(i, j int) bool { return v.sorted[i].Name < v.sorted[j].Name })
	return v
}

// SetLimits caps the topics and the partitions the registry holds (0: no
// cap). CreateTopic beyond them fails with ErrTooManyTopics or
// ErrTooManyPartitions; the check and the create are one step, so
// concurrent creators cannot overshoot.
func (s *Standalone) SetLimits(maxTopics, maxPartitions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxTopics, s.maxParts = maxTopics, maxPartitions
}

// Counts returns how many topics and partitions the registry holds,
// including creations not yet durable.
func (s *Standalone) Counts() (topics, partitions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.countsLocked()
}

func (s *Standalone) countsLocked() (topics, partitions int) {
	for _, t := range s.want {
		partitions += len(t.Leaders)
	}
	return len(s.want), partitions
}

func (s *Standalone) Self() Broker      { return s.self }
func (s *Standalone) Brokers() []Broker { return []Broker{s.self} }

func (s *Standalone) Topic(name string) (Topic, bool) {
	t, ok := s.view.Load().byName[name]
	return t, ok
}

func (s *Standalone) Topics() []Topic {
	return append([]Topic(nil), s.view.Load().sorted...)
}

func (s *Standalone) CreateTopic(ctx context.Context, name string, partitions int32, configs map[string]string) (Topic, error) {
	leaders, err := Spread(name, partitions, []Broker{s.self})
	if err != nil {
		return Topic{}, err
	}
	t := Topic{Name: name, ID: NewTopicID(), Leaders: leaders, Configs: configs}
	s.mu.Lock()
	if _, ok := s.want[name]; ok {
		s.mu.Unlock()
		// Someone else's creation may still be on its way to disk: the
		// caller, told the topic exists, will use it at once.
		s.waitDurable(ctx, name)
		return Topic{}, ErrTopicExists
	}
	topics, parts := s.countsLocked()
	switch {
	case s.maxTopics > 0 && topics+1 > s.maxTopics:
		s.mu.Unlock()
		return Topic{}, fmt.Errorf("%w: the broker holds %d topics, the limit is %d", ErrTooManyTopics, topics, s.maxTopics)
	case s.maxParts > 0 && parts+int(partitions) > s.maxParts:
		s.mu.Unlock()
		return Topic{}, fmt.Errorf("%w: the broker holds %d partitions, %d more would pass the limit of %d", ErrTooManyPartitions, parts, partitions, s.maxParts)
	}
	s.want[name] = t
	c := &change{name: name, topic: &t, done: make(chan error, 1)}
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	if err := s.commit(c); err != nil {
		return Topic{}, err
	}
	return t, nil
}

func (s *Standalone) DeleteTopic(_ context.Context, name string) error {
	s.mu.Lock()
	t, ok := s.want[name]
	if !ok {
		s.mu.Unlock()
		return ErrUnknownTopic
	}
	delete(s.want, name)
	c := &change{name: name, prev: &t, done: make(chan error, 1)}
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	return s.commit(c)
}

// commit returns once c is durable (or its write failed). Whoever holds
// writeMu writes every queued change at once, so a creator that finds its
// change already written by the previous writer returns without writing.
func (s *Standalone) commit(c *change) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	select {
	case err := <-c.done:
		return err
	default:
	}
	s.mu.Lock()
	batch := s.queue
	s.queue = nil
	next := newView(s.want)
	s.mu.Unlock()

	data, err := json.Marshal(next.sorted)
	if err == nil {
		if syncHook != nil {
			syncHook()
		}
		err = atomicfile.Write(s.path, data)
	}
	s.mu.Lock()
	if err != nil {
		err = fmt.Errorf("writing topic registry %s: %w", s.path, err)
		// Undo the batch's changes, newest first, unless a later queued
		// change has since replaced the same name.
		for i := len(batch) - 1; i >= 0; i-- {
			b := batch[i]
			if queuedAfter(s.queue, b.name) {
				continue
			}
			if b.prev != nil {
				s.want[b.name] = *b.prev
			} else {
				delete(s.want, b.name)
			}
		}
	} else {
		s.view.Store(next)
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	for _, b := range batch {
		b.done <- err
	}
	return <-c.done
}

// waitDurable returns once topic name is visible to lookups, or its
// creation failed, or ctx ends.
func (s *Standalone) waitDurable(ctx context.Context, name string) {
	for {
		s.mu.Lock()
		_, visible := s.view.Load().byName[name]
		_, pending := s.want[name]
		ch := s.changed
		s.mu.Unlock()
		if visible || !pending {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

func queuedAfter(queue []*change, name string) bool {
	for _, c := range queue {
		if c.name == name {
			return true
		}
	}
	return false
}

func (s *Standalone) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Standalone) Close() error { return nil }

var (
	// ErrTooManyTopics is returned when creating a topic would pass the
	// registry's topic limit (SetLimits).
	ErrTooManyTopics = errors.New("topic limit reached")
	// ErrTooManyPartitions is returned when creating a topic would pass the
	// registry's partition limit (SetLimits).
	ErrTooManyPartitions = errors.New("partition limit reached")
)
