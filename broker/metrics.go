package broker

// The root's side of the metrics (broker/metrics): New makes the collector
// before anything records events (the connection layer, the storage
// engine's flush observer), and hands it what it reads at scrape time
// once the broker's parts exist (startMetrics).

import (
	"errors"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary-io/tributary/broker/metrics"
	"github.com/tributary-io/tributary/broker/topicapi"
)

// The values of Config.PartitionMetrics.
const (
	PartitionMetricsPartition = metrics.PerPartition
	PartitionMetricsTopic     = metrics.PerTopic
)

// newMetrics makes the collector's event series.
func (b *Broker) newMetrics() *metrics.Collector {
	return metrics.New(metrics.Config{
		Off:            b.cfg.DisableMetrics,
		PerTopic:       b.cfg.PartitionMetrics == PartitionMetricsTopic,
		SASLMechanisms: b.cfg.SASLMechanisms,
	})
}

// startMetrics gives the collector the registry's APIs and the parts it
// reads, and starts its ISR watch.
func (b *Broker) startMetrics() {
	b.metrics.Start(b.apis, metrics.Sources{
		DataDir: b.cfg.DataDir, Self: b.selfID, Meta: b.meta, IsController: b.isController,
		Conns: b.ConnStats, OpenLogs: b.logs.OpenLogs,
		Groups: b.groups, Replicas: b.replicas, Txns: b.txns, TxnBackend: b.txnBackend,
		Stop: b.stopSync,
	})
}

// isController tells whether this broker is the cluster's controller; a
// standalone broker is.
func (b *Broker) isController() bool {
	c, ok := b.meta.(topicapi.ControllerReader)
	if !ok {
		return true
	}
	id, ok := c.Controller()
	return ok && id == b.selfID
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
	for _, p := range b.logs.OpenLogs() {
		if err := p.Log.Failed(); err != nil {
			return fmt.Errorf("partition %s-%d: %w", p.Topic, p.Partition, err)
		}
	}
	return nil
}
