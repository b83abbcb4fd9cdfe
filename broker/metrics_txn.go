package broker

// Transaction metrics: open transactions this broker coordinates, markers
// it wrote, and per partition with an open transaction how far the last
// stable offset lags the high watermark (what read_committed consumers
// wait for), read at scrape time. The coordinator's load: the
// __transaction_state partitions this broker leads (its share of the
// transactional ids), the ids it holds, and what reading state partitions
// cost (reads and seconds, whose ratio is Kafka's partition-load-time).

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary-io/tributary/broker/replication"
)

var (
	descTxnOpen       = desc("transactions_open", "Transactions this broker coordinates that are open or being completed.")
	descTxnMarkers    = desc("transaction_markers_total", "Transaction markers written into partitions this broker leads, by result (commit, abort).", "result")
	descLSOLag        = desc("partition_lso_lag", "High watermark minus last stable offset of a partition with an open transaction: the records read_committed consumers wait for.", "topic", "partition")
	descTxnStateLed   = desc("transaction_coordinator_partitions", "__transaction_state partitions this broker leads: its share of the transactional ids it coordinates.")
	descTxnIDs        = desc("transactional_ids", "Transactional ids this broker's transaction coordinator holds in memory.")
	descTxnLoads      = desc("transaction_state_loads_total", "__transaction_state partitions read by this broker's coordinator (once per partition and leader epoch); requests for their ids wait meanwhile.")
	descTxnLoadSecs   = desc("transaction_state_load_seconds_total", "Time spent reading __transaction_state partitions; divided by the loads, the average time a state partition takes to load.")
	descTxnLoadedRecs = desc("transaction_state_load_records_total", "Records read loading __transaction_state partitions.")
	txnDescs          = []*prometheus.Desc{descTxnOpen, descTxnMarkers, descLSOLag, descTxnStateLed, descTxnIDs, descTxnLoads, descTxnLoadSecs, descTxnLoadedRecs}
)

func (m *brokerMetrics) collectTxns(ch chan<- prometheus.Metric) {
	b := m.b
	if b.txns != nil {
		ch <- prometheus.MustNewConstMetric(descTxnOpen, prometheus.GaugeValue, float64(b.txns.OpenTransactions()))
		ch <- prometheus.MustNewConstMetric(descTxnStateLed, prometheus.GaugeValue, float64(b.ledStatePartitions()))
		ch <- prometheus.MustNewConstMetric(descTxnIDs, prometheus.GaugeValue, float64(b.txns.IDs()))
		loads := b.txns.Loads()
		ch <- prometheus.MustNewConstMetric(descTxnLoads, prometheus.CounterValue, float64(loads.Loads))
		ch <- prometheus.MustNewConstMetric(descTxnLoadSecs, prometheus.CounterValue, loads.Time.Seconds())
		ch <- prometheus.MustNewConstMetric(descTxnLoadedRecs, prometheus.CounterValue, float64(loads.Records))
	}
	ch <- prometheus.MustNewConstMetric(descTxnMarkers, prometheus.CounterValue, float64(b.txnMarkers[1].Load()), "commit")
	ch <- prometheus.MustNewConstMetric(descTxnMarkers, prometheus.CounterValue, float64(b.txnMarkers[0].Load()), "abort")
	for _, p := range b.openPartitions() {
		if p.log.FirstUnstableOffset() < 0 {
			continue
		}
		hw := p.log.HighWatermark()
		ch <- prometheus.MustNewConstMetric(descLSOLag, prometheus.GaugeValue, float64(hw-replication.LastStable(p.log, hw)),
			p.topic, strconv.Itoa(int(p.partition)))
	}
}

// txnMarkerWritten counts a marker written.
func (b *Broker) txnMarkerWritten(commit bool) {
	i := 0
	if commit {
		i = 1
	}
	b.txnMarkers[i].Add(1)
}

// ledStatePartitions counts the __transaction_state partitions this broker
// leads, once the topic exists (it is made at the first transactional
// request).
func (b *Broker) ledStatePartitions() int {
	t, ok := b.meta.Topic(txnStateTopic)
	if !ok {
		return 0
	}
	n := 0
	for p := range t.Partitions() {
		if st, ok := t.StateOf(p); ok && st.Leader == b.selfID {
			n++
		}
	}
	return n
}
