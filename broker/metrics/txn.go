package metrics

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

	"github.com/tributary-io/tributary/broker/partition"
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

// collectTxns reports the coordinator's state and, of the open partition
// logs, those with an open transaction.
func (m *Collector) collectTxns(ch chan<- prometheus.Metric, open []partition.OpenLog) {
	txns, backend := m.src.Txns, m.src.TxnBackend
	if txns != nil {
		ch <- prometheus.MustNewConstMetric(descTxnOpen, prometheus.GaugeValue, float64(txns.OpenTransactions()))
		if backend != nil {
			ch <- prometheus.MustNewConstMetric(descTxnStateLed, prometheus.GaugeValue, float64(backend.LedStatePartitions()))
		}
		ch <- prometheus.MustNewConstMetric(descTxnIDs, prometheus.GaugeValue, float64(txns.IDs()))
		loads := txns.Loads()
		ch <- prometheus.MustNewConstMetric(descTxnLoads, prometheus.CounterValue, float64(loads.Loads))
		ch <- prometheus.MustNewConstMetric(descTxnLoadSecs, prometheus.CounterValue, loads.Time.Seconds())
		ch <- prometheus.MustNewConstMetric(descTxnLoadedRecs, prometheus.CounterValue, float64(loads.Records))
	}
	if backend != nil {
		commits, aborts := backend.Markers()
		ch <- prometheus.MustNewConstMetric(descTxnMarkers, prometheus.CounterValue, float64(commits), "commit")
		ch <- prometheus.MustNewConstMetric(descTxnMarkers, prometheus.CounterValue, float64(aborts), "abort")
	}
	for _, p := range open {
		if p.Log.FirstUnstableOffset() < 0 {
			continue
		}
		hw := p.Log.HighWatermark()
		ch <- prometheus.MustNewConstMetric(descLSOLag, prometheus.GaugeValue, float64(hw-replication.LastStable(p.Log, hw)),
			p.Topic, strconv.Itoa(int(p.Partition)))
	}
}
