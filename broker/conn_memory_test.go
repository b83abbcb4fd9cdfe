package broker_test

// Clients that try to make the broker allocate: frames announcing more
// than they send, requests naming huge arrays, consumers that never read.

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestAnnouncedFramesDoNotAllocate: 50 connections announce 100 MiB frames
// and send nothing. The broker holds a read chunk for each, not 5 GB, and
// keeps answering other clients.
func TestAnnouncedFramesDoNotAllocate(t *testing.T) {
	b := testenv.StartBroker(t)
	base := heapAlloc()
	for range 50 {
		announce(t, b.Addr, 100<<20, nil)
	}
	testenv.Eventually(t, 30*time.Second, "the broker to read 50 frame sizes", func() bool {
		return b.ConnStats().ReadingRequests == 50
	})
	grown := int64(heapAlloc()) - int64(base)
	t.Logf("heap grew by %d KiB for 50 frames announcing 100 MiB each", grown>>10)
	if grown > 64<<20 {
		t.Errorf("heap grew by %d MiB for frames that sent no body", grown>>20)
	}
	w := dial(t, b.Addr)
	w.roundTrip(kmsg.NewPtrApiVersionsRequest())
	w.roundTrip(kmsg.NewPtrMetadataRequest())
}

// TestRequestBudgetMakesConnectionsWait: with the budget taken by one
// request in flight, the next connection waits for room instead of
// allocating, and is served once the first gives its bytes back.
func TestRequestBudgetMakesConnectionsWait(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.QueuedMaxRequestBytes = 1 << 20
		c.QueuedMaxRequestBytesPerIP = 1 << 20 // every connection is from 127.0.0.1
	}))
	hog := announce(t, b.Addr, 1<<20, []byte{0, 18, 0, 0})
	testenv.Eventually(t, 10*time.Second, "the first request to take the budget", func() bool {
		return b.ConnStats().QueuedRequestBytes == 1<<20
	})
	w := dial(t, b.Addr)
	w.corr++
	w.send(kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), w.corr))
	testenv.Eventually(t, 10*time.Second, "the second request to wait for budget", func() bool {
		return b.ConnStats().ReadingRequests == 2
	})
	if s := b.ConnStats(); s.QueuedRequestBytes != 1<<20 {
		t.Fatalf("budget in use %d with a request waiting, want %d", s.QueuedRequestBytes, 1<<20)
	}
	hog.conn.Close()
	w.readFrame() // served once the budget is free
	testenv.Eventually(t, 10*time.Second, "the budget to be free", func() bool {
		return b.ConnStats().QueuedRequestBytes == 0
	})
}

// TestMetadataNamingAMillionTopics: the request is refused before it is
// decoded, the refusal says why, and a request under the limit is answered.
func TestMetadataNamingAMillionTopics(t *testing.T) {
	var logs logBuffer
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.Logger = logs.logger() }))
	metadata := func(version int16, n int) *kmsg.MetadataRequest {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(version)
		empty := ""
		req.Topics = make([]kmsg.MetadataRequestTopic, n)
		for i := range req.Topics {
			req.Topics[i].Topic = &empty
		}
		return req
	}
	for _, version := range []int16{1, 12} {
		w := dial(t, b.Addr)
		w.send(kmsg.NewRequestFormatter().AppendRequest(nil, metadata(version, 1_000_000), 1))
		if !w.closedByBroker() {
			t.Fatalf("v%d: a Metadata request naming a million topics was served", version)
		}
	}
	if !strings.Contains(logs.String(), "names 1000000 topics; the limit is 10000") {
		t.Errorf("the refusal does not say why:\n%s", logs.String())
	}
	resp := dial(t, b.Addr).roundTrip(metadata(12, 10000)).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 10000 {
		t.Errorf("answered %d topics of 10000", len(resp.Topics))
	}
}

// openFilesUnder lists this process's open descriptors on files under dir.
func openFilesUnder(t *testing.T, dir string) []string {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var open []string
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir) {
			open = append(open, target)
		}
	}
	return open
}

// TestConsumerThatNeverReadsIsDropped: a client pipelines fetches and never
// reads the responses. It is dropped after the write deadline, and every
// segment reference its responses held is released: once the broker stops,
// no segment file is left open.
func TestConsumerThatNeverReadsIsDropped(t *testing.T) {
	var logs logBuffer
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.ResponseWriteTimeout = 300 * time.Millisecond
		c.Logger = logs.logger()
	}))
	createTopic(t, b.Addr, "unread", 1, nil)
	w := dial(t, b.Addr)
	value := strings.Repeat("x", 256<<10)
	for range 8 {
		produceResult(w.roundTrip(produceRequest(9, -1, "unread", 0, makeBatch(-1, -1, -1, value, value, value))))
	}

	others := b.ConnStats().Open
	reader := dial(t, b.Addr)
	if tc, ok := reader.conn.(interface{ SetReadBuffer(int) error }); ok {
		tc.SetReadBuffer(4 << 10)
	}
	for i := range 20 {
		f := fetchRequest(11, "unread", 0, 0)
		f.MaxBytes = 8 << 20
		f.Topics[0].Partitions[0].PartitionMaxBytes = 8 << 20
		reader.send(kmsg.NewRequestFormatter().AppendRequest(nil, f, int32(i)))
	}
	testenv.Eventually(t, 10*time.Second, "the reader's connection to be served", func() bool {
		return b.ConnStats().Open == others+1
	})
	testenv.Eventually(t, 30*time.Second, "the non-reading client to be dropped", func() bool {
		return b.ConnStats().Open == others
	})
	if !strings.Contains(logs.String(), "client is not reading its responses") {
		t.Errorf("the drop was not logged:\n%s", logs.String())
	}
	b.Stop()
	if open := openFilesUnder(t, b.DataDir); len(open) > 0 {
		t.Errorf("segment files still open after the broker stopped (leaked fetch references): %v", open)
	}
}
