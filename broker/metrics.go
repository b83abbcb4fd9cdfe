package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/partition"
	"github.com/tributary-io/tributary/internal/recordbatch"
)

// brokerMetrics are the broker's Prometheus metrics, named and meant as
// Kafka's (BrokerTopicMetrics, RequestMetrics, SocketServer, Log).
//
// Most numbers are read at scrape time from the state the broker keeps
// anyway (partitions, connection counters, committed offsets), so serving
// costs nothing between scrapes. What only exists as an event (a request
// answered, bytes appended or sent, an fsync) is recorded by a one-line
// hook into this type, which needs no lock of the broker's.
//
// Labels are bounded: API names and versions come from the API registry,
// error names from kerr, topics only once they exist (a produce or fetch to
// an unknown topic counts as an error, not as a new series). There is no
// client-id label: any client could make unbounded series of it.
type brokerMetrics struct {
	b *Broker

	requests   *prometheus.CounterVec
	unanswered *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	partErrors *prometheus.CounterVec
	bytesIn    *prometheus.CounterVec
	messagesIn *prometheus.CounterVec
	bytesOut   *prometheus.CounterVec
	accepted   prometheus.Counter
	fsync      prometheus.Histogram
	flushBatch prometheus.Histogram
	queue      *prometheus.HistogramVec
	throttle   *prometheus.CounterVec
	refused    *prometheus.CounterVec
	isrShrinks prometheus.Counter
	isrExpands prometheus.Counter
	quarantine quarantineMetrics

	// off makes the event hooks no-ops (Config.DisableMetrics); the state
	// read at scrape time is still served.
	off bool

	// byKey holds each supported API's series, resolved once so that the
	// request hook does no label lookup.
	byKey [maxAPIKey + 1]*apiSeries
	// byTopic holds each topic's produce series (topic name to
	// *topicSeries), resolved on the topic's first append for the same
	// reason. It grows with the topics that exist, as the series do.
	byTopic sync.Map
}

type topicSeries struct {
	bytesIn, messagesIn prometheus.Counter
}

// maxAPIKey is the largest API key served (DescribeTopicPartitions, 75).
const maxAPIKey = 75

type apiSeries struct {
	versions   []prometheus.Counter // by version - min
	min        int16
	unanswered prometheus.Counter
	duration   prometheus.Observer
	queue      prometheus.Observer
}

// Descriptions of the series read at scrape time.
var (
	descConnsOpen   = desc("broker_connections_open", "Connections being served.")
	descConnsRef    = desc("broker_connections_refused_total", "Connections closed at once because max.connections or max.connections.per.ip was reached.")
	descQueued      = desc("broker_queued_request_bytes", "Bytes held by requests in flight, out of queued.max.request.bytes.")
	descReading     = desc("broker_requests_reading", "Connections that have received a request's size and wait for budget or for its body.")
	descHW          = desc("partition_high_watermark", "High watermark: the offset after the last fsynced batch, the end of what consumers see.", "topic", "partition")
	descLEO         = desc("partition_log_end_offset", "Offset the next appended batch will get.", "topic", "partition")
	descStart       = desc("partition_log_start_offset", "First offset still in the log (retention moves it).", "topic", "partition")
	descSize        = desc("partition_size_bytes", "Bytes of all segment files of the partition.", "topic", "partition")
	descSegments    = desc("partition_segments", "Segment files of the partition.", "topic", "partition")
	descUnflushed   = desc("partition_unflushed_bytes", "Bytes appended but not yet fsynced: not visible to consumers, lost on power failure.", "topic", "partition")
	descProducers   = desc("partition_producer_ids", "Idempotent producer ids whose sequences the partition tracks.", "topic", "partition")
	descLag         = desc("group_lag", "Consumer lag of a group (broker-side or ZooKeeper) on a partition stored here: high watermark minus the committed offset (0 when the commit is ahead).", "group", "topic", "partition")
	descMembers     = desc("group_members", "Members of a broker-side group this broker coordinates, labelled with the group's state (Stable, PreparingRebalance, CompletingRebalance, Empty; consumer-protocol groups: Assigning, Reconciling, Stable).", "group", "state")
	descGeneration  = desc("group_generation", "Generation of a broker-side group this broker coordinates: it grows by one at every completed rebalance, so its rate is the group's rebalance rate.", "group")
	descCommitted   = desc("group_committed_offset", "Offset a group committed on a partition stored here: the next it will consume.", "group", "topic", "partition")
	descDiskFree    = desc("broker_data_dir_free_bytes", "Bytes free to this process on the data directory's file system: an append fails once it is 0.")
	descDiskSize    = desc("broker_data_dir_capacity_bytes", "Size of the data directory's file system.")
	descPartFailure = desc("partition_failed", "1 when the partition's log stopped taking appends after a write or fsync failure.", "topic", "partition")
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	d := prometheus.NewDesc("tributary_"+name, help, labels, nil)
	descLabelsMu.Lock()
	descLabels[d] = labels // metrics_partitions.go
	descLabelsMu.Unlock()
	return d
}

func newBrokerMetrics(b *Broker) *brokerMetrics {
	m := &brokerMetrics{
		b:   b,
		off: b.cfg.DisableMetrics,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_requests_total",
			Help: "Requests read and handed to their handler, per Kafka API and version.",
		}, []string{"api", "version"}),
		unanswered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_requests_unanswered_total",
			Help: "Requests whose response was never written: the handler panicked, or the connection was dropped (client gone, not reading, broker shutting down).",
		}, []string{"api"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tributary_broker_request_duration_seconds",
			Help:    "Time from a request's last byte read to its response written (Kafka's TotalTimeMs), per API; includes long-poll waits of Fetch and the fsync wait of acks=all.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"api"}),
		partErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_partition_errors_total",
			Help: "Partitions answered with an error in Produce and Fetch responses, by API and Kafka error name (Kafka's FailedProduceRequests and FailedFetchRequests, split by cause).",
		}, []string{"api", "error"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_topic_bytes_in_total",
			Help: "Record batch bytes appended to the topic by producers (Kafka's BytesInPerSec).",
		}, []string{"topic"}),
		messagesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_topic_messages_in_total",
			Help: "Records appended to the topic, idempotent duplicates included (Kafka's MessagesInPerSec).",
		}, []string{"topic"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_topic_bytes_out_total",
			Help: "Record batch bytes of the topic put into Fetch responses (Kafka's BytesOutPerSec).",
		}, []string{"topic"}),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_broker_connections_accepted_total",
			Help: "Connections accepted and admitted under the connection caps.",
		}),
		fsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tributary_log_flush_duration_seconds",
			Help:    "Time one partition flush spent in fsync (Kafka's LogFlushRateAndTimeMs); a slow disk shows here first.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		flushBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tributary_log_flush_messages",
			Help:    "Records one flush made visible: how many appends each fsync covered (group commit).",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10),
		}),
		queue: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tributary_broker_request_queue_seconds",
			Help:    "Time from a request's frame being read to its handler starting (Kafka's RequestQueueTimeMs), per API: decoding it; the connection reads its next request only after.",
			Buckets: []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .1},
		}, []string{"api"}),
		throttle: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_quota_throttle_seconds_total",
			Help: "Throttle time given to clients over their byte-rate quota, by kind (produce, fetch): the broker stops reading their connection that long (Kafka's throttle-time). Not by user or client id: unbounded.",
		}, []string{"kind"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_logins_refused_total",
			Help: "SASL logins refused, by mechanism and reason: bad_credentials (unknown user or wrong password), rate_limited (the client's address failed too often within a minute).",
		}, []string{"mechanism", "reason"}),
		isrShrinks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_isr_shrinks_total",
			Help: "ISR shrinks of partitions this broker leads (Kafka's IsrShrinksPerSec): a follower lagged longer than replica.lag.time.max.ms or its broker died.",
		}),
		quarantine: newQuarantineMetrics(),
		isrExpands: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_isr_expands_total",
			Help: "ISR expansions of partitions this broker leads (Kafka's IsrExpandsPerSec): a follower caught up with the high watermark again.",
		}),
	}
	for _, kind := range []string{"produce", "fetch"} {
		m.throttle.WithLabelValues(kind)
	}
	for _, mech := range b.cfg.SASLMechanisms {
		for _, reason := range []string{"bad_credentials", "rate_limited"} {
			m.refused.WithLabelValues(mech, reason)
		}
	}
	return m
}

// observeAPIs makes the series of each API and version of r. New calls it
// once r is complete, before the broker serves.
func (m *brokerMetrics) observeAPIs(r *kafkaapi.Registry) {
	for _, key := range r.Keys() {
		vr, _ := r.Lookup(key)
		name := kmsg.NameForKey(key)
		s := &apiSeries{
			min:        vr.Min,
			unanswered: m.unanswered.WithLabelValues(name),
			duration:   m.duration.WithLabelValues(name),
			queue:      m.queue.WithLabelValues(name),
		}
		for v := vr.Min; v <= vr.Max; v++ {
			s.versions = append(s.versions, m.requests.WithLabelValues(name, strconv.Itoa(int(v))))
		}
		m.byKey[key] = s
	}
}

// logConfig returns the storage configuration with the flush observer set,
// keeping one the caller set.
func (m *brokerMetrics) logConfig(c log.Config) log.Config {
	if m.off {
		return c
	}
	prev := c.OnFlush
	c.OnFlush = func(f log.Flush) {
		m.fsync.Observe(f.Duration.Seconds())
		m.flushBatch.Observe(float64(f.Messages))
		if prev != nil {
			prev(f)
		}
	}
	prevLost := c.OnLost
	c.OnLost = func(r log.LostRange) {
		m.quarantine.onLost(r)
		if prevLost != nil {
			prevLost(r)
		}
	}
	return c
}

// ResponseDone records one request once its response is written
// (answered) or dropped (netserver.Observer).
func (m *brokerMetrics) ResponseDone(key, v int16, read time.Time, answered bool) {
	if m.off || key < 0 || int(key) >= len(m.byKey) || m.byKey[key] == nil {
		return
	}
	s := m.byKey[key]
	if i := int(v - s.min); i >= 0 && i < len(s.versions) {
		s.versions[i].Inc()
	}
	if !answered {
		s.unanswered.Inc()
		return
	}
	s.duration.Observe(time.Since(read).Seconds())
}

// ConnAccepted counts a connection accepted from a listener
// (netserver.Observer).
func (m *brokerMetrics) ConnAccepted() { m.accepted.Inc() }

// Produced records one partition of a Produce request after its append
// (dataapi.Metrics).
func (m *brokerMetrics) Produced(topic string, records []byte, code int16) {
	if m.off {
		return
	}
	if code != 0 {
		m.partErrors.WithLabelValues("Produce", errorName(code)).Inc()
		return
	}
	// The batches were validated by the append: their headers can be read.
	var n int64
	for b := records; len(b) >= recordbatch.HeaderSize; {
		n += int64(int32(binary.BigEndian.Uint32(b[recordbatch.OffRecordCount:])))
		size := int(int32(binary.BigEndian.Uint32(b[recordbatch.OffLength:]))) + recordbatch.LengthPrefix
		if size < recordbatch.HeaderSize || size > len(b) {
			break
		}
		b = b[size:]
	}
	s := m.topicSeries(topic)
	s.bytesIn.Add(float64(len(records)))
	s.messagesIn.Add(float64(n))
}

func (m *brokerMetrics) topicSeries(topic string) *topicSeries {
	if s, ok := m.byTopic.Load(topic); ok {
		return s.(*topicSeries)
	}
	s, _ := m.byTopic.LoadOrStore(topic, &topicSeries{
		bytesIn:    m.bytesIn.WithLabelValues(topic),
		messagesIn: m.messagesIn.WithLabelValues(topic),
	})
	return s.(*topicSeries)
}

// Fetched records the record bytes a Fetch response carries of topic
// (dataapi.Metrics).
func (m *brokerMetrics) Fetched(topic string, bytes int64) {
	if m.off {
		return
	}
	m.bytesOut.WithLabelValues(topic).Add(float64(bytes))
}

// PartitionError records a partition that api answered with code
// (dataapi.Metrics).
func (m *brokerMetrics) PartitionError(api string, code int16) {
	if m.off {
		return
	}
	m.partErrors.WithLabelValues(api, errorName(code)).Inc()
}

// HandlerStarted records a request's queue time: from its frame read
// (read) to its handler starting, now (netserver.Observer).
func (m *brokerMetrics) HandlerStarted(key int16, read time.Time) {
	if m.off {
		return
	}
	if key >= 0 && int(key) < len(m.byKey) && m.byKey[key] != nil {
		m.byKey[key].queue.Observe(time.Since(read).Seconds())
	}
}

// Throttled records a throttle given to a client over its quota; kind is
// produce or fetch (dataapi.Metrics).
func (m *brokerMetrics) Throttled(kind string, d time.Duration) {
	if m.off || d <= 0 {
		return
	}
	m.throttle.WithLabelValues(kind).Add(d.Seconds())
}

// loginRefused records a refused SASL login; reason is bad_credentials or
// rate_limited.
func (m *brokerMetrics) loginRefused(mechanism, reason string) {
	if m.off {
		return
	}
	m.refused.WithLabelValues(mechanism, reason).Inc()
}

func errorName(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return ke.Message
		}
	}
	return "UNKNOWN_SERVER_ERROR"
}

// events are the metrics recorded by hooks.
func (m *brokerMetrics) events() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.unanswered, m.duration, m.partErrors,
		m.bytesIn, m.messagesIn, m.bytesOut, m.accepted, m.fsync, m.flushBatch,
		m.queue, m.throttle, m.refused, m.isrShrinks, m.isrExpands, m.quarantine.ranges, m.quarantine.offsets}
}

// Describe sends the description of every family, including those with
// no series yet, so the registry can refuse a duplicate name.
func (m *brokerMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.events() {
		c.Describe(ch)
	}
	for _, d := range []*prometheus.Desc{descConnsOpen, descConnsRef, descQueued, descReading, descHW, descLEO,
		descStart, descSize, descSegments, descUnflushed, descProducers, descLag, descCommitted, descMembers, descGeneration,
		descPartFailure, descDiskFree, descDiskSize} {
		ch <- d
	}
	for _, d := range replicaDescs {
		ch <- d
	}
	for _, d := range txnDescs { // metrics_txn.go
		ch <- d
	}
}

// Collect reads the broker's state: connections, every open partition and
// the lag of every group this broker coordinates; per topic rather than
// per partition when Config.PartitionMetrics says so (metrics_partitions.go).
func (m *brokerMetrics) Collect(ch chan<- prometheus.Metric) {
	if m.b.cfg.PartitionMetrics != PartitionMetricsTopic {
		m.collect(ch)
		return
	}
	in := make(chan prometheus.Metric, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sumByTopic(in, ch)
	}()
	m.collect(in)
	close(in)
	<-done
}

func (m *brokerMetrics) collect(ch chan<- prometheus.Metric) {
	for _, c := range m.events() {
		c.Collect(ch)
	}

	cs := m.b.ConnStats()
	ch <- prometheus.MustNewConstMetric(descConnsOpen, prometheus.GaugeValue, float64(cs.Open))
	ch <- prometheus.MustNewConstMetric(descConnsRef, prometheus.CounterValue, float64(cs.Refused))
	ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(cs.QueuedRequestBytes))
	ch <- prometheus.MustNewConstMetric(descReading, prometheus.GaugeValue, float64(cs.ReadingRequests))

	var fs unix.Statfs_t
	if unix.Statfs(m.b.cfg.DataDir, &fs) == nil {
		ch <- prometheus.MustNewConstMetric(descDiskFree, prometheus.GaugeValue, float64(fs.Bavail)*float64(fs.Bsize))
		ch <- prometheus.MustNewConstMetric(descDiskSize, prometheus.GaugeValue, float64(fs.Blocks)*float64(fs.Bsize))
	}

	hw := map[string]map[int32]int64{}
	logEnd := map[partition.Key]int64{}
	for _, p := range m.b.openPartitions() {
		st := p.log.Stats()
		part := strconv.Itoa(int(p.partition))
		gauge := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), p.topic, part)
		}
		gauge(descHW, st.HighWatermark)
		gauge(descLEO, st.LogEndOffset)
		gauge(descStart, st.StartOffset)
		gauge(descSize, st.Size)
		gauge(descSegments, int64(st.Segments))
		gauge(descUnflushed, st.UnflushedBytes)
		gauge(descProducers, int64(st.Producers))
		failed := int64(0)
		if p.log.Failed() != nil {
			failed = 1
		}
		gauge(descPartFailure, failed)
		if hw[p.topic] == nil {
			hw[p.topic] = map[int32]int64{}
		}
		hw[p.topic][p.partition] = st.HighWatermark
		logEnd[partition.Key{Topic: p.topic, Partition: p.partition}] = st.LogEndOffset
	}
	m.collectLag(ch, hw)
	m.collectReplication(ch, logEnd)
	m.collectTxns(ch) // metrics_txn.go
}

// openPartitions lists the open partition logs. Partitions whose logs are
// closed (opened lazily, or closed to stay within the descriptor budget)
// are not listed: a scrape must not open files.
func (b *Broker) openPartitions() []openPartition {
	var out []openPartition
	for _, o := range b.logs.OpenLogs() {
		out = append(out, openPartition{o.Topic, o.Partition, o.Log})
	}
	return out
}

// Metrics is the broker's Prometheus collector: register it on the
// process's registry to export it.
func (b *Broker) Metrics() prometheus.Collector { return b.metrics }

// Ready reports why the broker cannot serve, or nil: shut down, data
// directory gone, or a partition log stopped after a failed write.
func (b *Broker) Ready() error {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return errors.New("broker is shut down")
	}
	if _, err := os.Stat(b.cfg.DataDir); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	for _, p := range b.openPartitions() {
		if err := p.log.Failed(); err != nil {
			return fmt.Errorf("partition %s-%d: %w", p.topic, p.partition, err)
		}
	}
	return nil
}
