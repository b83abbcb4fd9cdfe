package log

// ActiveProducer is an idempotent producer's state in one partition, as
// DescribeProducers reports it.
type ActiveProducer struct {
	ID            int64
	Epoch         int16
	LastSequence  int32 // of its newest batch; -1 if none is remembered
	LastTimestamp int64 // when it last appended, in ms (the log's clock)
	// CoordinatorEpoch is that of the newest transaction coordinator whose
	// marker this partition wrote for the producer since the log was
	// opened, -1 if none: kafka-transactions abort sends its marker with
	// it, and one from an older coordinator epoch is refused.
	CoordinatorEpoch int32
}

// ActiveProducers lists the producers the partition tracks, least
// recently active first.
func (l *Log) ActiveProducers() []ActiveProducer {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]ActiveProducer, 0, len(l.producers.index))
	l.producers.each(func(e *producerEntry) {
		p := ActiveProducer{ID: e.id, Epoch: e.epoch, LastSequence: -1, LastTimestamp: e.lastSeen, CoordinatorEpoch: -1}
		if e.markers > 0 || e.coordEpoch > 0 {
			p.CoordinatorEpoch = e.coordEpoch
		}
		if e.n > 0 {
			p.LastSequence = e.newest().lastSeq()
		}
		out = append(out, p)
	})
	return out
}
