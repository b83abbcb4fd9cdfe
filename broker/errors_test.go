package broker_test

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

func listLatest(t *testing.T, w *wire, topic string, partition int32) int64 {
	t.Helper()
	return listOffset(t, w, topic, partition, -1)
}

var errOffsetOutOfRange = kerr.OffsetOutOfRange

// listOffset asks ListOffsets for a timestamp: -1 latest, -2 earliest.
func listOffset(t *testing.T, w *wire, topic string, partition int32, timestamp int64) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(4)
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p := w.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("ListOffsets %s/%d: %v", topic, partition, kerr.ErrorForCode(p.ErrorCode))
	}
	return p.Offset
}

// wantCode checks a response's error code; want nil means no error.
func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var code int16
	if want != nil {
		code = want.Code
	}
	if got != code {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// TestBadBatchesRejected sends batches a client should never send and checks
// the error each gets and that nothing of them reached the log.
func TestBadBatchesRejected(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.MaxMessageBytes = 4096 }))
	createTopic(t, b.Addr, "strict", 1, nil)
	w := dial(t, b.Addr)
	good := makeBatch(-1, -1, -1, "a", "b")

	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-1] ^= 0xff
	magic1 := append([]byte(nil), good...)
	magic1[16] = 1
	shortLen := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(shortLen[8:], uint32(len(good)+100))
	tooBig := makeBatch(-1, -1, -1, strings.Repeat("x", 5000))

	cases := []struct {
		name    string
		version int16
		records []byte
		want    *kerr.Error
	}{
		{"flipped byte fails the CRC", 9, flipped, kerr.CorruptMessage},
		{"magic 1 message set", 9, magic1, kerr.UnsupportedForMessageFormat},
		{"length beyond the records", 9, shortLen, kerr.CorruptMessage},
		{"truncated header", 9, good[:40], kerr.CorruptMessage},
		{"batch above message.max.bytes", 9, tooBig, kerr.MessageTooLarge},
		{"produce v2 (message format v1)", 2, good, kerr.UnsupportedForMessageFormat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := produceResult(w.roundTrip(produceRequest(c.version, -1, "strict", 0, c.records)))
			wantCode(t, c.name, p.ErrorCode, c.want)
			if c.version >= 8 && (p.ErrorMessage == nil || *p.ErrorMessage == "") {
				t.Errorf("no error message for the user")
			}
			if got := listLatest(t, w, "strict", 0); got != 0 {
				t.Fatalf("log end moved to %d: a rejected batch must leave no trace", got)
			}
		})
	}
	// The connection survived every refusal and still appends a good batch.
	p := produceResult(w.roundTrip(produceRequest(9, -1, "strict", 0, good)))
	wantCode(t, "good batch", p.ErrorCode, nil)
	if got := listLatest(t, w, "strict", 0); got != 2 {
		t.Fatalf("latest offset %d after a 2-record batch, want 2", got)
	}
}

// TestIdempotentSequences: a duplicate is acknowledged with the original
// offset and not appended again; a gap is refused.
func TestIdempotentSequences(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "idem", 1, nil)
	w := dial(t, b.Addr)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.SetVersion(4)
	ir := w.roundTrip(init).(*kmsg.InitProducerIDResponse)
	wantCode(t, "InitProducerId", ir.ErrorCode, nil)
	pid, epoch := ir.ProducerID, ir.ProducerEpoch

	first := produceResult(w.roundTrip(produceRequest(9, -1, "idem", 0, makeBatch(pid, epoch, 0, "a", "b"))))
	wantCode(t, "first batch", first.ErrorCode, nil)
	second := produceResult(w.roundTrip(produceRequest(9, -1, "idem", 0, makeBatch(pid, epoch, 2, "c"))))
	wantCode(t, "second batch", second.ErrorCode, nil)
	dup := produceResult(w.roundTrip(produceRequest(9, -1, "idem", 0, makeBatch(pid, epoch, 0, "a", "b"))))
	wantCode(t, "retried first batch", dup.ErrorCode, nil)
	if dup.BaseOffset != first.BaseOffset {
		t.Fatalf("duplicate acknowledged at offset %d, original was at %d", dup.BaseOffset, first.BaseOffset)
	}
	gap := produceResult(w.roundTrip(produceRequest(9, -1, "idem", 0, makeBatch(pid, epoch, 7, "z"))))
	wantCode(t, "sequence gap", gap.ErrorCode, kerr.OutOfOrderSequenceNumber)
	if got := listLatest(t, w, "idem", 0); got != 3 {
		t.Fatalf("log end %d, want 3: the duplicate and the gap must not be appended", got)
	}
}

// TestUnknownTopic: with auto-creation off, every API names the problem.
func TestUnknownTopic(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.AutoCreateTopics = false }))
	w := dial(t, b.Addr)
	p := produceResult(w.roundTrip(produceRequest(9, -1, "nope", 0, makeBatch(-1, -1, -1, "x"))))
	wantCode(t, "produce", p.ErrorCode, kerr.UnknownTopicOrPartition)

	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(9)
	name := "nope"
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: &name}}
	meta.AllowAutoTopicCreation = true
	mr := w.roundTrip(meta).(*kmsg.MetadataResponse)
	wantCode(t, "metadata", mr.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)

	f := fetchRequest(11, "nope", 0, 0)
	fr := w.roundTrip(f).(*kmsg.FetchResponse)
	wantCode(t, "fetch", fr.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)

	createTopic(t, b.Addr, "two", 2, nil)
	p = produceResult(w.roundTrip(produceRequest(9, -1, "two", 5, makeBatch(-1, -1, -1, "x"))))
	wantCode(t, "partition beyond the topic", p.ErrorCode, kerr.UnknownTopicOrPartition)
}

func fetchRequest(version int16, topic string, partition int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestFetchOutOfRange: an offset beyond the log end is refused.
func TestFetchOutOfRange(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "short", 1, nil)
	w := dial(t, b.Addr)
	produceResult(w.roundTrip(produceRequest(9, -1, "short", 0, makeBatch(-1, -1, -1, "x"))))
	fr := w.roundTrip(fetchRequest(11, "short", 0, 50)).(*kmsg.FetchResponse)
	wantCode(t, "fetch past the end", fr.Topics[0].Partitions[0].ErrorCode, kerr.OffsetOutOfRange)
}

// TestCreateTopicsValidation: each refused topic says why.
func TestCreateTopicsValidation(t *testing.T) {
	b := testenv.StartBroker(t)
	w := dial(t, b.Addr)
	shred, bogus := "shred", "1"
	cases := []struct {
		name       string
		topic      kmsg.CreateTopicsRequestTopic
		want       *kerr.Error
		msgMention string
	}{
		{"bad name", kmsg.CreateTopicsRequestTopic{Topic: "a/b", NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidTopicException, "a/b"},
		{"zero partitions", kmsg.CreateTopicsRequestTopic{Topic: "z", NumPartitions: 0, ReplicationFactor: 1}, kerr.InvalidPartitions, "partitions"},
		{"replication", kmsg.CreateTopicsRequestTopic{Topic: "r", NumPartitions: 1, ReplicationFactor: 3}, kerr.InvalidReplicationFactor, "replication"},
		{"cleanup policy", kmsg.CreateTopicsRequestTopic{Topic: "c", NumPartitions: 1, ReplicationFactor: 1,
			Configs: []kmsg.CreateTopicsRequestTopicConfig{{Name: "cleanup.policy", Value: &shred}}}, kerr.InvalidConfig, "cleanup.policy"},
		{"unknown config", kmsg.CreateTopicsRequestTopic{Topic: "u", NumPartitions: 1, ReplicationFactor: 1,
			Configs: []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.msec", Value: &bogus}}}, kerr.InvalidConfig, "retention.msec"},
	}
	for _, c := range cases {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(5)
		req.Topics = []kmsg.CreateTopicsRequestTopic{c.topic}
		st := w.roundTrip(req).(*kmsg.CreateTopicsResponse).Topics[0]
		wantCode(t, c.name, st.ErrorCode, c.want)
		if st.ErrorMessage == nil || !strings.Contains(*st.ErrorMessage, c.msgMention) {
			t.Errorf("%s: message %v should mention %q", c.name, st.ErrorMessage, c.msgMention)
		}
	}
	createTopic(t, b.Addr, "once", 1, nil)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(5)
	req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "once", NumPartitions: 1, ReplicationFactor: 1}}
	wantCode(t, "existing topic", w.roundTrip(req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode, kerr.TopicAlreadyExists)
}

// TestMalformedFramesCloseConnection: a frame that claims too many bytes or
// cannot be decoded closes its connection; the broker keeps serving.
func TestMalformedFramesCloseConnection(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.MaxRequestBytes = 1 << 20 }))
	frames := map[string][]byte{
		"size above socket.request.max.bytes": {0x7f, 0xff, 0xff, 0xff},
		"negative size":                       {0xff, 0xff, 0xff, 0xff},
		"unknown api key":                     {0, 0, 0, 10, 0x03, 0xe7, 0, 0, 0, 0, 0, 1, 0, 0},
		"body that does not decode":           {0, 0, 0, 12, 0, 3, 0, 9, 0, 0, 0, 1, 0, 0, 0xff, 0xff},
	}
	for name, frame := range frames {
		t.Run(name, func(t *testing.T) {
			w := dial(t, b.Addr)
			w.send(frame)
			if !w.closedByBroker() {
				t.Fatal("the broker kept the connection open")
			}
			// Still serving.
			ok := dial(t, b.Addr)
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(3)
			if r := ok.roundTrip(req).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 || len(r.ApiKeys) == 0 {
				t.Fatalf("broker stopped answering: %+v", r)
			}
		})
	}
}

// TestApiVersions: flexible requests get a v0 response header, and a version
// newer than ours gets UNSUPPORTED_VERSION with our ranges.
func TestApiVersions(t *testing.T) {
	b := testenv.StartBroker(t)
	w := dial(t, b.Addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	r := w.roundTrip(req).(*kmsg.ApiVersionsResponse)
	ranges := map[int16][2]int16{}
	for _, k := range r.ApiKeys {
		ranges[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	// What librdkafka 2.0 and the Java 4.x client look for.
	for key, need := range map[int16][2]int16{0: {0, 3}, 1: {4, 4}, 2: {1, 1}, 19: {2, 2}, 22: {0, 0}} {
		got, ok := ranges[key]
		if !ok || got[0] > need[0] || got[1] < need[1] {
			t.Errorf("api %s advertised %v, must include %d..%d", kmsg.NameForKey(key), got, need[0], need[1])
		}
	}
	// A future ApiVersions version: answered in v0 with UNSUPPORTED_VERSION.
	frame := []byte{0, 0, 0, 10, 0, 18, 0, 99, 0, 0, 0, 7, 0xff, 0xff}
	w.send(frame)
	body := w.readFrame()
	v0 := kmsg.NewPtrApiVersionsResponse()
	v0.SetVersion(0)
	if err := v0.ReadFrom(body[4:]); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "ApiVersions v99", v0.ErrorCode, kerr.UnsupportedVersion)
	if len(v0.ApiKeys) != len(r.ApiKeys) {
		t.Fatalf("UNSUPPORTED_VERSION answer lists %d apis, want %d", len(v0.ApiKeys), len(r.ApiKeys))
	}
}
