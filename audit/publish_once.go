package audit

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// PublishOnce publishes counts that are part of a durable record, such as
// a committed load run's manifest, which may be published again after a
// crash. The events are published under the fixed publisher name, numbered
// 1, 2, 3, ... in window order, the last one final, and each event's id is
// EventID(name, sequence): publishing the same counts under the same name
// again sends events the reconciler already holds, which it counts once.
// at is the header time of every event (the record's own time, so the
// same record always gives the same events). It retries until every event
// is acknowledged or ctx is done.
func PublishOnce(ctx context.Context, cfg PublisherConfig, name string, at time.Time, c *Counts) error {
	cfg.Now = func() time.Time { return at }
	p, err := newPublisher(cfg)
	if err != nil {
		return err
	}
	defer p.client.Close()
	p.id, p.source, p.fixedIDs = name, name, true
	p.log = p.log.With("audit_publisher", name)
	p.pending = c.Clone()
	p.mu.Lock()
	p.build(true, true)
	p.mu.Unlock()
	if err := p.sendMu.lock(ctx); err != nil {
		return err
	}
	defer p.sendMu.unlock()
	for {
		err := p.sendOutbox(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// EventID is the id of event seq of a publisher whose ids are derived
// (PublishOnce): the first 16 bytes of sha256(name, seq).
func EventID(name string, seq int64) [16]byte {
	h := sha256.New()
	h.Write([]byte(name))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seq))
	h.Write([]byte{0})
	h.Write(b[:])
	var id [16]byte
	copy(id[:], h.Sum(nil))
	return id
}
