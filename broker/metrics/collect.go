package metrics

// What the collector reads at scrape time (Sources), and the families it
// describes.

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/netserver"
	"github.com/tributary-io/tributary/broker/partition"
	"github.com/tributary-io/tributary/broker/replication"
	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/broker/txnbackend"
	"github.com/tributary-io/tributary/cluster"
)

// Sources are the broker's parts the collector reads at scrape time; a
// nil part is not reported.
type Sources struct {
	DataDir string // its file system's free and total bytes
	Self    int32  // this broker's id
	Meta    cluster.Metadata
	// IsController tells whether this broker is the cluster's controller
	// (a standalone broker is).
	IsController func() bool
	Conns        func() netserver.Stats
	// OpenLogs lists the open partition logs (partition.Table.OpenLogs):
	// a scrape must not open files, so closed ones are not reported.
	OpenLogs   func() []partition.OpenLog
	Groups     *group.Coordinator
	Replicas   *replication.Manager
	Txns       *txn.Coordinator
	TxnBackend *txnbackend.Backend
	// Stop ends the ISR watch (Start).
	Stop <-chan struct{}
}

// Start makes the series of each API and version of apis, keeps src for
// scrapes and counts ISR changes until src.Stop is closed. The broker
// calls it once its parts exist, before it serves or is scraped.
func (m *Collector) Start(apis *kafkaapi.Registry, src Sources) {
	m.observeAPIs(apis)
	m.src = src
	go m.watchISRs() // replication.go
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
	descLabels[d] = labels // pertopic.go
	descLabelsMu.Unlock()
	return d
}

// events are the metrics recorded by hooks.
func (m *Collector) events() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.unanswered, m.duration, m.partErrors,
		m.bytesIn, m.messagesIn, m.bytesOut, m.accepted, m.fsync, m.flushBatch,
		m.queue, m.throttle, m.refused, m.isrShrinks, m.isrExpands, m.quarantine.ranges, m.quarantine.offsets}
}

// Describe sends the description of every family, including those with
// no series yet, so the registry can refuse a duplicate name.
func (m *Collector) Describe(ch chan<- *prometheus.Desc) {
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
	for _, d := range txnDescs { // txn.go
		ch <- d
	}
}

// Collect reads the broker's state: connections, every open partition and
// the lag of every group this broker coordinates; per topic rather than
// per partition when Config.PerTopic says so (pertopic.go).
func (m *Collector) Collect(ch chan<- prometheus.Metric) {
	if !m.perTopic {
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

func (m *Collector) collect(ch chan<- prometheus.Metric) {
	for _, c := range m.events() {
		c.Collect(ch)
	}
	src := &m.src
	if src.Conns != nil {
		cs := src.Conns()
		ch <- prometheus.MustNewConstMetric(descConnsOpen, prometheus.GaugeValue, float64(cs.Open))
		ch <- prometheus.MustNewConstMetric(descConnsRef, prometheus.CounterValue, float64(cs.Refused))
		ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(cs.QueuedRequestBytes))
		ch <- prometheus.MustNewConstMetric(descReading, prometheus.GaugeValue, float64(cs.ReadingRequests))
	}

	var fs unix.Statfs_t
	if src.DataDir != "" && unix.Statfs(src.DataDir, &fs) == nil {
		ch <- prometheus.MustNewConstMetric(descDiskFree, prometheus.GaugeValue, float64(fs.Bavail)*float64(fs.Bsize))
		ch <- prometheus.MustNewConstMetric(descDiskSize, prometheus.GaugeValue, float64(fs.Blocks)*float64(fs.Bsize))
	}

	var open []partition.OpenLog
	if src.OpenLogs != nil {
		open = src.OpenLogs()
	}
	hw := map[string]map[int32]int64{}
	logEnd := map[partition.Key]int64{}
	for _, p := range open {
		st := p.Log.Stats()
		part := strconv.Itoa(int(p.Partition))
		gauge := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), p.Topic, part)
		}
		gauge(descHW, st.HighWatermark)
		gauge(descLEO, st.LogEndOffset)
		gauge(descStart, st.StartOffset)
		gauge(descSize, st.Size)
		gauge(descSegments, int64(st.Segments))
		gauge(descUnflushed, st.UnflushedBytes)
		gauge(descProducers, int64(st.Producers))
		failed := int64(0)
		if p.Log.Failed() != nil {
			failed = 1
		}
		gauge(descPartFailure, failed)
		if hw[p.Topic] == nil {
			hw[p.Topic] = map[int32]int64{}
		}
		hw[p.Topic][p.Partition] = st.HighWatermark
		logEnd[p.Key] = st.LogEndOffset
	}
	m.collectLag(ch, hw)
	if src.Meta != nil {
		m.collectReplication(ch, logEnd)
	}
	m.collectTxns(ch, open) // txn.go
}
