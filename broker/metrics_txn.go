package broker

// Transaction metrics: open transactions this broker coordinates, markers
// it wrote, and per partition with an open transaction how far the last
// stable offset lags the high watermark (what read_committed consumers
// wait for), read at scrape time.

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descTxnOpen    = desc("transactions_open", "Transactions this broker coordinates that are open or being completed.")
	descTxnMarkers = desc("transaction_markers_total", "Transaction markers written into partitions this broker leads, by result (commit, abort).", "result")
	descLSOLag     = desc("partition_lso_lag", "High watermark minus last stable offset of a partition with an open transaction: the records read_committed consumers wait for.", "topic", "partition")
	txnDescs       = []*prometheus.Desc{descTxnOpen, descTxnMarkers, descLSOLag}
)

func (m *brokerMetrics) collectTxns(ch chan<- prometheus.Metric) {
	b := m.b
	if b.txns != nil {
		ch <- prometheus.MustNewConstMetric(descTxnOpen, prometheus.GaugeValue, float64(b.txns.OpenTransactions()))
	}
	ch <- prometheus.MustNewConstMetric(descTxnMarkers, prometheus.CounterValue, float64(b.txnMarkers[1].Load()), "commit")
	ch <- prometheus.MustNewConstMetric(descTxnMarkers, prometheus.CounterValue, float64(b.txnMarkers[0].Load()), "abort")
	for _, p := range b.openPartitions() {
		if p.log.FirstUnstableOffset() < 0 {
			continue
		}
		hw := p.log.HighWatermark()
		ch <- prometheus.MustNewConstMetric(descLSOLag, prometheus.GaugeValue, float64(hw-lastStable(p.log, hw)),
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
