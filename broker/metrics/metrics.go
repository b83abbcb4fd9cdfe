// Package metrics is the broker's Prometheus collector: metrics named and
// meant as Kafka's (BrokerTopicMetrics, RequestMetrics, SocketServer, Log,
// ReplicaManager, the transaction coordinator's).
//
// Most numbers are read at scrape time from the state the broker keeps
// anyway (partitions, connection counters, committed offsets; Sources), so
// serving costs nothing between scrapes. What only exists as an event (a
// request answered, bytes appended or sent, an fsync) is recorded by a
// one-line hook into Collector (netserver.Observer, dataapi.Metrics, the
// storage engine's flush observer), which takes no lock of the broker's.
//
// Labels are bounded: API names and versions come from the API registry,
// error names from kerr, topics only once they exist (a produce or fetch to
// an unknown topic counts as an error, not as a new series). There is no
// client-id label: any client could make unbounded series of it.
//
// The broker builds a Collector with New before anything that records
// events, and hands it what it reads with Start once its parts exist;
// nothing here imports the root broker.
package metrics

import (
	"encoding/binary"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/recordbatch"
)

// Config is fixed when the collector is made.
type Config struct {
	// Off makes the event hooks no-ops (broker.Config.DisableMetrics); the
	// state read at scrape time is still served.
	Off bool
	// PerTopic exports the partition-level families per topic
	// (PartitionMetricsTopic, pertopic.go).
	PerTopic bool
	// SASLMechanisms are the mechanisms whose refused logins get series
	// from the start.
	SASLMechanisms []string
}

// Collector is the broker's metrics: the event hooks' series and, at
// scrape time, what Sources report.
type Collector struct {
	src      Sources // set by Start, before the broker serves
	perTopic bool

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

	// off makes the event hooks no-ops (Config.Off).
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

// New makes the collector's event series.
func New(cfg Config) *Collector {
	m := &Collector{
		off:      cfg.Off,
		perTopic: cfg.PerTopic,
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
	for _, mech := range cfg.SASLMechanisms {
		for _, reason := range []string{"bad_credentials", "rate_limited"} {
			m.refused.WithLabelValues(mech, reason)
		}
	}
	return m
}

// observeAPIs makes the series of each API and version of r.
func (m *Collector) observeAPIs(r *kafkaapi.Registry) {
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

// LogConfig returns the storage configuration with the flush and
// quarantine observers set, keeping those the caller set.
func (m *Collector) LogConfig(c log.Config) log.Config {
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
func (m *Collector) ResponseDone(key, v int16, read time.Time, answered bool) {
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
func (m *Collector) ConnAccepted() { m.accepted.Inc() }

// Produced records one partition of a Produce request after its append
// (dataapi.Metrics).
func (m *Collector) Produced(topic string, records []byte, code int16) {
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

func (m *Collector) topicSeries(topic string) *topicSeries {
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
func (m *Collector) Fetched(topic string, bytes int64) {
	if m.off {
		return
	}
	m.bytesOut.WithLabelValues(topic).Add(float64(bytes))
}

// PartitionError records a partition that api answered with code
// (dataapi.Metrics).
func (m *Collector) PartitionError(api string, code int16) {
	if m.off {
		return
	}
	m.partErrors.WithLabelValues(api, errorName(code)).Inc()
}

// HandlerStarted records a request's queue time: from its frame read
// (read) to its handler starting, now (netserver.Observer).
func (m *Collector) HandlerStarted(key int16, read time.Time) {
	if m.off {
		return
	}
	if key >= 0 && int(key) < len(m.byKey) && m.byKey[key] != nil {
		m.byKey[key].queue.Observe(time.Since(read).Seconds())
	}
}

// Throttled records a throttle given to a client over its quota; kind is
// produce or fetch (dataapi.Metrics).
func (m *Collector) Throttled(kind string, d time.Duration) {
	if m.off || d <= 0 {
		return
	}
	m.throttle.WithLabelValues(kind).Add(d.Seconds())
}

// LoginRefused records a refused SASL login; reason is bad_credentials or
// rate_limited (saslapi.Config.Refused).
func (m *Collector) LoginRefused(mechanism, reason string) {
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
