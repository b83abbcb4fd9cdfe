package audit

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// publish turns pending counts into monitoring events (all windows, or
// only closed ones) and sends every event not yet acknowledged.
func (p *Publisher) publish(ctx context.Context, all, final bool) error {
	if err := p.sendMu.lock(ctx); err != nil {
		return err
	}
	defer p.sendMu.unlock()
	p.mu.Lock()
	if p.wal != nil {
		p.walBuild(all, final)
	} else {
		p.build(all, final)
	}
	queued := len(p.outbox)
	p.mu.Unlock()
	if p.wal != nil && queued > 0 {
		p.wal.pause("built")
	}
	return p.sendOutbox(ctx)
}

// sendOutbox sends every event built and not yet acknowledged. Called
// with sendMu held.
func (p *Publisher) sendOutbox(ctx context.Context) error {
	p.mu.Lock()
	out := slices.Clone(p.outbox)
	p.mu.Unlock()
	if len(out) == 0 {
		return nil
	}
	acked, err := p.send(ctx, out)
	if p.wal != nil && len(acked) > 0 {
		p.wal.pause("sent")
	}
	p.mu.Lock()
	p.outbox = slices.DeleteFunc(p.outbox, func(e *Event) bool { return acked[e] })
	if p.wal != nil && len(acked) > 0 {
		p.walPublished(acked)
	}
	p.mu.Unlock()
	return err
}

// build moves pending counts into the outbox, one event per window. When
// nothing has closed with counts, the latest closed window still gets an
// empty event: it tells the reconciler the publisher is alive, so that a
// silent one can be told apart from one that crashed. Called with mu held.
func (p *Publisher) build(all, final bool) {
	now := p.cfg.Now()
	current := WindowStart(now, p.cfg.Window)
	lastClosed := current.Add(-p.cfg.Window)
	built := 0
	for _, w := range p.pending.Windows() {
		if !all && !w.Before(current) {
			continue
		}
		counts, noTime, malformed := p.pending.take(w)
		lat := p.pending.takeLatency(w)
		p.append(now, w, counts, noTime, malformed).Latency = lat
		built++
	}
	if !all && built == 0 && lastClosed.After(p.beat) {
		p.append(now, lastClosed, nil, nil, nil)
		built++
	}
	if built > 0 && lastClosed.After(p.beat) {
		p.beat = lastClosed
	}
	if final {
		if built == 0 {
			p.append(now, current, nil, nil, nil)
		}
		p.outbox[len(p.outbox)-1].Final = true
	}
}

// append numbers an event and queues it. Called with mu held.
func (p *Publisher) append(now, w time.Time, counts []Count, noTime, malformed []TopicCount) *Event {
	p.seq++
	e := &Event{
		Published: now.UTC().Truncate(time.Millisecond),
		Host:      p.cfg.Host,
		Tier:      p.cfg.Tier,
		Source:    p.source,
		Publisher: p.id,
		Sequence:  p.seq,
		Snapshot:  p.snapshot,
		Window:    w,
		Size:      p.cfg.Window,
		Counts:    counts,
		NoTime:    noTime,
		Malformed: malformed,
		Covers:    p.covers,
		Previous:  slices.Clone(p.prev),
	}
	if p.fixedIDs {
		e.ID = EventID(p.id, e.Sequence)
	} else {
		rand.Read(e.ID[:])
	}
	p.prev = slices.Insert(p.prev, 0, Prior{Sequence: e.Sequence, Window: w, Topics: eventTopics(e)})
	if len(p.prev) > maxPrevious {
		p.prev = p.prev[:maxPrevious]
	}
	p.outbox = append(p.outbox, e)
	return e
}

// send produces events keyed by the publisher, so that one publisher's
// events stay in one partition and in order, and returns those that were
// acknowledged. An event is serialized again on each attempt; its id and
// sequence stay, so a retry that duplicates it is counted once.
func (p *Publisher) send(ctx context.Context, events []*Event) (map[*Event]bool, error) {
	acked := make(map[*Event]bool, len(events))
	recs := make([]*kgo.Record, 0, len(events))
	sent := make(map[*kgo.Record]*Event, len(events))
	for _, e := range events {
		if p.drop != nil && p.drop(e) {
			acked[e] = true
			continue
		}
		v, err := p.ser.Serialize(ctx, p.cfg.Topic, e.native())
		if err != nil {
			return acked, fmt.Errorf("audit: encode monitoring event %d: %w", e.Sequence, err)
		}
		r := &kgo.Record{Topic: p.cfg.Topic, Key: []byte(p.source), Value: v}
		recs = append(recs, r)
		sent[r] = e
	}
	if len(recs) == 0 {
		return acked, nil
	}
	// kgo waits for an answer to a request already sent, whatever ctx
	// says; brokers that accept and never answer must not keep a
	// shutdown waiting, so the send is left behind at ctx's deadline (its
	// events stay in the outbox; a later send of them is counted once).
	done := make(chan kgo.ProduceResults, 1)
	go func() {
		p.ensureTopic(ctx)
		done <- p.client.ProduceSync(ctx, recs...)
	}()
	var results kgo.ProduceResults
	select {
	case results = <-done:
	case <-ctx.Done():
		return acked, fmt.Errorf("audit: publishing %d monitoring events to %s: the brokers did not answer in time: %w", len(recs), p.cfg.Topic, context.Cause(ctx))
	}
	var firstErr error
	// Results come back in completion order, not in the order sent.
	for _, r := range results {
		e := sent[r.Record]
		if r.Err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("audit: publish monitoring event %d (window %s) to %s: %w", e.Sequence, e.Window.Format(time.RFC3339), p.cfg.Topic, r.Err)
			}
			continue
		}
		acked[e] = true
	}
	return acked, firstErr
}

// ensureTopic creates the audit topic the first time this publisher
// sends: Kafka clients do not ask for topics to be created when they
// produce, and a publisher whose topic does not exist would retry forever.
// A failure is only logged: the topic may exist or be auto-created anyway,
// and the produce that follows says what is really wrong.
func (p *Publisher) ensureTopic(ctx context.Context) {
	if p.topicReady.Load() {
		return
	}
	_, err := kadm.NewClient(p.client).CreateTopic(ctx, 1, -1, nil, p.cfg.Topic)
	if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
		p.topicReady.Store(true)
		return
	}
	p.log.Debug("audit: could not create the audit topic", "topic", p.cfg.Topic, "err", err)
}

// sendLock is a mutex whose lock gives up when ctx is done: a send stuck
// on brokers that never answer must not keep Flush or Close past their
// deadline.
type sendLock chan struct{}

func (l sendLock) lock(ctx context.Context) error {
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("audit: an earlier publish is still waiting for the brokers: %w", context.Cause(ctx))
	}
}

func (l sendLock) unlock() { <-l }
