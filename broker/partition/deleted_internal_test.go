package partition

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// A request that looked a topic up just before DeleteTopics must not open
// its partition again once the delete closed it: the reopened log would
// recreate the directory being removed and log errors when it closes into
// a directory that is gone. The same name created again opens normally.
func TestDeletedTopicIsNotReopened(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
	dir := t.TempDir()
	var mu sync.Mutex
	view := map[string]cluster.Topic{}
	ps := New(Config{Dir: dir, Base: testLogConfig, Logger: logger, Current: func(name string) (cluster.Topic, bool) {
		mu.Lock()
		defer mu.Unlock()
		t, ok := view[name]
		return t, ok
	}})
	defer ps.CloseAll()
	setView := func(t cluster.Topic, present bool) {
		mu.Lock()
		defer mu.Unlock()
		if present {
			view[t.Name] = t
		} else {
			delete(view, t.Name)
		}
	}

	old := cluster.Topic{Name: "gone", ID: cluster.NewTopicID(), Leaders: []int32{1}}
	setView(old, true)
	l, err := ps.Get(old, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(oneRecord()); err != nil {
		t.Fatal(err)
	}

	setView(old, false) // the cluster view drops the topic first, as DeleteTopics does
	ps.DeleteTopic("gone")

	// The request that looked "gone" up before the delete.
	if _, err := ps.Get(old, 0); !errors.Is(err, ErrTopicDeleted) {
		t.Fatalf("opening a partition of the deleted topic: err %v, want ErrTopicDeleted", err)
	}
	if _, err := os.Stat(ps.Dir("gone", 0)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("partition directory of the deleted topic after the stale open: %v, want it gone", err)
	}
	if ps.isOpen(Key{"gone", 0}) {
		t.Fatal("the deleted topic's partition is open again")
	}

	// Created again under the same name: a new id, opened normally, empty;
	// a request still holding the old topic is refused until then.
	fresh := cluster.Topic{Name: "gone", ID: cluster.NewTopicID(), Leaders: []int32{1}}
	setView(fresh, true)
	if _, err := ps.Get(old, 0); !errors.Is(err, ErrTopicDeleted) {
		t.Fatalf("stale lookup after the topic was created again: err %v, want ErrTopicDeleted", err)
	}
	l, err = ps.Get(fresh, 0)
	if err != nil {
		t.Fatalf("opening the topic created again: %v", err)
	}
	if end := l.LogEndOffset(); end != 0 {
		t.Fatalf("the topic created again starts at offset %d, want 0", end)
	}
	if logs.Len() > 0 {
		t.Fatalf("errors logged:\n%s", logs.String())
	}
}

// DeleteTopics and the broker's view watcher both delete a topic's
// partitions, often at once: one's removal of the directory must not run
// while the other's close still writes the log's checkpoints into it
// ("write recovery checkpoint: ... no such file or directory").
func TestConcurrentDeletesOfATopicLogNoError(t *testing.T) {
	var logs lockedLogs
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
	var top cluster.Topic
	var mu sync.Mutex
	ps := New(Config{Dir: t.TempDir(), Base: testLogConfig, Logger: logger, Current: func(string) (cluster.Topic, bool) {
		mu.Lock()
		defer mu.Unlock()
		return top, true
	}})
	defer ps.CloseAll()
	for round := range 20 {
		mu.Lock()
		top = cluster.Topic{Name: "twice", ID: cluster.NewTopicID(), Leaders: []int32{1, 1, 1, 1}}
		mu.Unlock()
		for p := range top.Partitions() {
			l, err := ps.Get(top, p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(oneRecord()); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ps.DeleteTopic("twice")
			}()
		}
		wg.Wait()
		if s := logs.String(); s != "" {
			t.Fatalf("round %d: errors logged:\n%s", round, s)
		}
	}
}

type lockedLogs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLogs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testLogConfig flushes only when asked: the tests here look at opening
// and deleting, not at durability.
var testLogConfig = log.Config{IntervalFlush: true, FlushInterval: time.Hour, RetentionCheckInterval: time.Hour}

// oneRecord is a batch of one record, "a".
func oneRecord() []byte {
	return rbtest.Batch(rbtest.Record(0, nil, []byte("a")), 1, 0)
}
