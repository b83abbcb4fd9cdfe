package broker_test

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/testenv"
)

// heldFS is the OS file system whose fsyncs of one topic's segments wait
// while the test holds them, and fail once it says so; it counts the
// writes to those segments, so the test knows when requests are appended.
type heldFS struct {
	log.OSFS
	topic   string
	mu      sync.Mutex
	gate    chan struct{} // nil: open
	err     error
	written atomic.Int64
}

func (h *heldFS) OpenFile(name string, flag int, perm os.FileMode) (log.File, error) {
	f, err := h.OSFS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") || !strings.Contains(name, string(os.PathSeparator)+h.topic+"-") {
		return f, err
	}
	return heldFile{f, h}, nil
}

func (h *heldFS) hold() (open func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	gate := make(chan struct{})
	h.gate = gate
	return sync.OnceFunc(func() {
		h.mu.Lock()
		h.gate = nil
		h.mu.Unlock()
		close(gate)
	})
}

func (h *heldFS) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.err = err
}

type heldFile struct {
	log.File
	h *heldFS
}

func (f heldFile) WriteAt(b []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(b, off)
	f.h.written.Add(1)
	return n, err
}

func (f heldFile) Sync() error {
	f.h.mu.Lock()
	gate := f.h.gate
	f.h.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.h.mu.Lock()
	err := f.h.err
	f.h.mu.Unlock()
	if err != nil {
		return err
	}
	return f.File.Sync()
}

// pipelineAcksAll sends n acks=all Produce requests of one batch each over
// w without reading, alternating between partitions 0 and 1, and waits
// until the broker has written all of them to the held segments.
func pipelineAcksAll(t *testing.T, w *wire, fsys *heldFS, n int) {
	t.Helper()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("tributary-test"))
	before := fsys.written.Load()
	for i := range n {
		w.corr++
		w.send(f.AppendRequest(nil, produceRequest(9, -1, fsys.topic, int32(i%2), makeBatch(-1, -1, -1, "a", "b")), w.corr))
	}
	deadline := time.Now().Add(30 * time.Second)
	for fsys.written.Load()-before < int64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests appended", fsys.written.Load()-before, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readProduceAnswers reads n Produce answers from w, in order, and returns
// their error codes.
func readProduceAnswers(t *testing.T, w *wire, n int) []int16 {
	t.Helper()
	var codes []int16
	for i := range n {
		body := w.readFrame()
		want := w.corr - int32(n) + int32(i) + 1
		if got := int32(binary.BigEndian.Uint32(body)); got != want {
			t.Fatalf("answer %d: correlation id %d, want %d", i, got, want)
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		if err := resp.ReadFrom(body[5:]); err != nil { // correlation id, header tags
			t.Fatal(err)
		}
		codes = append(codes, resp.Topics[0].Partitions[0].ErrorCode)
	}
	return codes
}

// TestAcksAllAnsweredByTheFlushThatCoversIt: pipelined acks=all requests
// on two partitions are answered only once the fsync covering them is
// done, in request order, and waiting costs no goroutine per request (the
// flush completes them).
func TestAcksAllAnsweredByTheFlushThatCoversIt(t *testing.T) {
	fsys := &heldFS{topic: "held"}
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.Log.FS = fsys }))
	createTopic(t, b.Addr, fsys.topic, 2, nil)
	w := dial(t, b.Addr)
	pipelineAcksAll(t, w, fsys, 2) // the connection's goroutines are running
	readProduceAnswers(t, w, 2)

	open := fsys.hold()
	defer open()
	const n = 24
	before := runtime.NumGoroutine()
	pipelineAcksAll(t, w, fsys, n)
	if now := runtime.NumGoroutine(); now-before >= n/2 {
		t.Errorf("goroutines went from %d to %d while %d acks=all requests waited", before, now, n)
	}
	w.conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := w.conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("an answer came while the fsync covering it was held")
	}
	open()
	for i, code := range readProduceAnswers(t, w, n) {
		if code != 0 {
			t.Fatalf("answer %d: error code %d", i, code)
		}
	}
}

// TestAcksAllFailedFsyncFailsEveryWaitingRequest: when the fsync fails,
// every acks=all request waiting on the partition is answered
// KAFKA_STORAGE_ERROR, in order; none is acknowledged.
func TestAcksAllFailedFsyncFailsEveryWaitingRequest(t *testing.T) {
	fsys := &heldFS{topic: "failing"}
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.Log.FS = fsys }))
	createTopic(t, b.Addr, fsys.topic, 2, nil)
	w := dial(t, b.Addr)
	open := fsys.hold()
	defer open()
	const n = 8
	pipelineAcksAll(t, w, fsys, n)
	fsys.fail(errors.New("injected: I/O error"))
	open()
	for i, code := range readProduceAnswers(t, w, n) {
		if code != kerr.KafkaStorageError.Code {
			t.Fatalf("answer %d: error code %d, want KAFKA_STORAGE_ERROR", i, code)
		}
	}
}

// TestAcksAllTimesOutWhileTheFsyncIsHeld: a request whose timeout passes
// before the fsync covering it ends is answered REQUEST_TIMED_OUT and
// dropped from the flush's waiters; a later request is served normally once
// the fsync ends.
func TestAcksAllTimesOutWhileTheFsyncIsHeld(t *testing.T) {
	fsys := &heldFS{topic: "slow"}
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.Log.FS = fsys }))
	createTopic(t, b.Addr, fsys.topic, 1, nil)
	w := dial(t, b.Addr)
	open := fsys.hold()
	defer open()
	req := produceRequest(9, -1, fsys.topic, 0, makeBatch(-1, -1, -1, "a"))
	req.TimeoutMillis = 100
	if code := produceResult(w.roundTrip(req)).ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("error code %d, want REQUEST_TIMED_OUT", code)
	}
	open()
	if code := produceResult(w.roundTrip(produceRequest(9, -1, fsys.topic, 0, makeBatch(-1, -1, -1, "b")))).ErrorCode; code != 0 {
		t.Fatalf("after the fsync: error code %d", code)
	}
}

// TestAcksAllWaitingAtShutdownIsAnswered: Close does not wait for a held
// fsync to answer the acks=all requests waiting on it: they are answered
// (NOT_LEADER_FOR_PARTITION, as before the flush answered them: the client
// retries elsewhere) and none is acknowledged, and Close returns.
func TestAcksAllWaitingAtShutdownIsAnswered(t *testing.T) {
	fsys := &heldFS{topic: "closing"}
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.Log.FS = fsys }))
	createTopic(t, b.Addr, fsys.topic, 2, nil)
	w := dial(t, b.Addr)
	open := fsys.hold()
	const n = 4
	pipelineAcksAll(t, w, fsys, n)
	closed := make(chan error, 1)
	go func() { closed <- b.Broker.Close() }()
	w.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for i := range n {
		body, err := readFrameErr(w)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		if err := resp.ReadFrom(body[5:]); err != nil {
			t.Fatal(err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code == 0 {
			t.Fatalf("answer %d acknowledged while its fsync was held", i)
		}
	}
	open() // the final flush of Close may now end
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return")
	}
}

// readFrameErr reads one response frame, or returns the read's error.
func readFrameErr(w *wire) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(w.conn, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(w.conn, body)
	return body, err
}
