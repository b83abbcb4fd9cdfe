package cluster

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"
)

// stallWrites makes every registry write stop just before its fsync until
// the returned release is called, as a slow disk would; entered receives
// once per write that reached that point.
func stallWrites(t *testing.T) (entered <-chan struct{}, release func()) {
	t.Helper()
	in := make(chan struct{}, 16)
	gate := make(chan struct{})
	syncHook = func() {
		in <- struct{}{}
		<-gate
	}
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(func() { release(); syncHook = nil })
	return in, release
}

// returnsWhileStalled fails the test if fn has not returned after a
// generous wait: a lookup blocked behind the stalled write never would.
func returnsWhileStalled(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s waited for the topic registry write", what)
	}
}

// TestLookupsDoNotWaitForRegistryWrites is the produce and fetch path's
// promise: looking up an existing topic never waits for a topic being
// created, and the new topic appears only once it is durable.
func TestLookupsDoNotWaitForRegistryWrites(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStandalone(dir, Broker{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.CreateTopic(ctx, "existing", 2, nil); err != nil {
		t.Fatal(err)
	}
	entered, release := stallWrites(t)
	created := make(chan error, 1)
	go func() {
		_, err := s.CreateTopic(ctx, "new", 1, nil)
		created <- err
	}()
	<-entered
	returnsWhileStalled(t, "Topic", func() {
		if _, ok := s.Topic("existing"); !ok {
			t.Error("existing topic not found during a create")
		}
		if _, ok := s.Topic("new"); ok {
			t.Error("topic visible before its creation was durable")
		}
	})
	returnsWhileStalled(t, "Topics", func() {
		if n := len(s.Topics()); n != 1 {
			t.Errorf("Topics during a create: %d topics, want 1", n)
		}
	})
	release()
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Topic("new"); !ok {
		t.Fatal("created topic not visible")
	}
	s2, err := OpenStandalone(dir, Broker{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s2.Topics()); got != 2 {
		t.Fatalf("after reopening: %d topics, want 2", got)
	}
}

// TestConcurrentCreatesShareWrites: creators queued behind a write are all
// covered by the next one, so a burst costs a couple of fsyncs.
func TestConcurrentCreatesShareWrites(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStandalone(dir, Broker{})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := stallWrites(t)
	var wg sync.WaitGroup
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	wg.Go(func() { s.CreateTopic(context.Background(), "first", 1, nil) })
	<-entered
	for _, n := range names {
		wg.Go(func() {
			if _, err := s.CreateTopic(context.Background(), n, 1, nil); err != nil {
				t.Error(err)
			}
		})
	}
	// Wait until every creator has queued its change behind the stalled write.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatal("creators never queued behind the stalled write")
		}
		s.mu.Lock()
		queued := len(s.queue)
		s.mu.Unlock()
		if queued == len(names) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	release()
	wg.Wait()
	if writes := len(entered); writes != 1 {
		t.Fatalf("%d writes after the first for %d queued creates, want 1", writes, len(names))
	}
	if got := len(s.Topics()); got != len(names)+1 {
		t.Fatalf("%d topics, want %d", got, len(names)+1)
	}
}

func TestStandaloneLimits(t *testing.T) {
	s, err := OpenStandalone(t.TempDir(), Broker{})
	if err != nil {
		t.Fatal(err)
	}
	s.SetLimits(2, 5)
	ctx := context.Background()
	if _, err := s.CreateTopic(ctx, "a", 4, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, "b", 2, nil); !errors.Is(err, ErrTooManyPartitions) {
		t.Fatalf("5+1 partitions: %v, want ErrTooManyPartitions", err)
	}
	if _, err := s.CreateTopic(ctx, "b", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, "c", 0, nil); !errors.Is(err, ErrTooManyTopics) {
		t.Fatalf("third topic: %v, want ErrTooManyTopics", err)
	}
	if err := s.DeleteTopic(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, "c", 4, nil); err != nil {
		t.Fatalf("after a delete frees room: %v", err)
	}
}

// TestFailedWriteLeavesNoTopic: a create whose write fails is neither
// visible nor remembered.
func TestFailedWriteLeavesNoTopic(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStandalone(dir, Broker{})
	if err != nil {
		t.Fatal(err)
	}
	// A directory where the temporary file goes makes the write fail.
	if err := os.Mkdir(s.path+".tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(context.Background(), "x", 1, nil); err == nil {
		t.Fatal("create succeeded although the registry could not be written")
	}
	if _, ok := s.Topic("x"); ok {
		t.Fatal("failed topic is visible")
	}
	os.Remove(s.path + ".tmp")
	if _, err := s.CreateTopic(context.Background(), "x", 1, nil); err != nil {
		t.Fatalf("retry after the failure: %v", err)
	}
}

// A second creator of a topic whose creation is still being written is told
// it exists only once it is durable and visible: told "exists", a client
// uses the topic at once.
func TestTopicExistsOnlyOnceDurable(t *testing.T) {
	s, err := OpenStandalone(t.TempDir(), Broker{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	entered, release := stallWrites(t)
	first := make(chan error, 1)
	go func() {
		_, err := s.CreateTopic(ctx, "racy", 1, nil)
		first <- err
	}()
	<-entered
	second := make(chan error, 1)
	go func() {
		_, err := s.CreateTopic(ctx, "racy", 1, nil)
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("second creator answered (%v) while the first creation was not yet durable", err)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second creator: %v, want ErrTopicExists", err)
	}
	if _, ok := s.Topic("racy"); !ok {
		t.Fatal("told the topic exists, but lookups do not find it")
	}
}
