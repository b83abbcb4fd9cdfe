package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// walClockSlack is how far before an intent's time its record is looked
// for: a topic stamped with LogAppendTime carries the brokers' clock,
// which may be behind ours.
const walClockSlack = time.Minute

// Recover looks in the brokers for the records that a producer which
// died had sent through the same WAL without writing their
// acknowledgement, and counts those found (the rest are looked for
// again at each publish, and given up once surely not written). Call it
// before producing, so a WAL that cannot be resolved is heard of at once.
// It returns how many were found and how many are still doubtful.
func (p *Producer) Recover(ctx context.Context) (found, doubtful int, err error) {
	return p.pub.Recover(ctx)
}

// Recover is Producer.Recover for a publisher told where to look with
// FindIn.
func (p *Publisher) Recover(ctx context.Context) (found, doubtful int, err error) {
	p.mu.Lock()
	find := p.walFind
	p.mu.Unlock()
	if p.wal == nil || find == nil {
		return 0, 0, nil
	}
	found, _, err = p.resolveDoubtful(ctx, find)
	return found, p.Doubtful(), err
}

// FindIn tells a WAL publisher the client whose brokers the records it
// counts are produced to, for the records whose acknowledgement a killed
// process never wrote. A Producer does this itself.
func (p *Publisher) FindIn(cl *kgo.Client) {
	if p.wal == nil {
		return
	}
	p.mu.Lock()
	p.walFind = func(ctx context.Context, ins []*walIntent) (map[uint64]bool, error) { return findSent(ctx, cl, ins) }
	p.mu.Unlock()
}

// Intend writes, before r is produced by a client other than a
// Producer's (the mirror's), what it counts as: eventTime and server as
// read from its header (herr the error of that read: ErrNoTime, a
// malformed value, or nil). Report the outcome with Sent. It sets r's
// timestamp if it has none. Only for a publisher with a WAL.
func (p *Publisher) Intend(r *kgo.Record, eventTime time.Time, server string, herr error) (uint64, error) {
	if p.wal == nil {
		return 0, errors.New("audit: Intend needs a publisher with a WAL")
	}
	kind := kindEvent
	switch {
	case herr == nil:
	case errors.Is(herr, ErrNoTime):
		kind, server = kindNoTime, ""
	default:
		kind, server = kindMalformed, ""
	}
	if kind != kindEvent {
		if r.Timestamp.IsZero() {
			r.Timestamp = p.cfg.Now().Truncate(time.Millisecond)
		}
		eventTime = r.Timestamp
	}
	return p.walIntend(r, kind, WindowStart(eventTime, p.cfg.Window), server, eventTime)
}

// Sent reports the outcome of producing the record of intent seq: err
// nil, acknowledged and counted; otherwise doubtful, looked for in the
// brokers (a request that failed may still have been written).
func (p *Publisher) Sent(seq uint64, err error) {
	if err == nil {
		p.walAcked(seq)
	} else {
		p.walFailed(seq)
	}
}

// produceLogged produces r through the WAL: its intent is written
// first, and it is counted once its acknowledgement is written.
func (p *Producer) produceLogged(ctx context.Context, r *kgo.Record, t time.Time, server string, herr error, promise func(*kgo.Record, error)) error {
	seq, err := p.pub.Intend(r, t, server, herr)
	if err != nil {
		return err
	}
	p.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
		p.pub.Sent(seq, err)
		if promise != nil {
			promise(r, err)
		}
	})
	return nil
}

// findSent reads the brokers from each doubtful record's time on (with
// walClockSlack) to the last stable offset, at read_committed, and returns
// the records found, matched by topic and the hash of their value.
func findSent(ctx context.Context, pcl *kgo.Client, ins []*walIntent) (map[uint64]bool, error) {
	want := map[string]map[[16]byte][]uint64{}
	earliest := map[string]int64{}
	for _, in := range ins {
		if want[in.Topic] == nil {
			want[in.Topic] = map[[16]byte][]uint64{}
			earliest[in.Topic] = in.Sent
		}
		want[in.Topic][in.Hash] = append(want[in.Topic][in.Hash], in.Seq)
		earliest[in.Topic] = min(earliest[in.Topic], in.Sent)
	}
	adm := kadm.NewClient(pcl)
	parts := map[string]map[int32]kgo.Offset{}
	ends := map[string]map[int32]int64{}
	remaining := 0
	for topic, ms := range earliest {
		from, err := adm.ListOffsetsAfterMilli(ctx, ms-walClockSlack.Milliseconds(), topic)
		if err == nil {
			err = from.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("audit WAL: offsets of %s after %s: %w", topic, time.UnixMilli(ms).UTC().Format(time.RFC3339), err)
		}
		to, err := adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			err = to.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("audit WAL: end offsets of %s: %w", topic, err)
		}
		from.Each(func(o kadm.ListedOffset) {
			end, ok := to.Lookup(topic, o.Partition)
			if !ok || o.Offset < 0 || o.Offset >= end.Offset {
				return
			}
			if parts[topic] == nil {
				parts[topic], ends[topic] = map[int32]kgo.Offset{}, map[int32]int64{}
			}
			parts[topic][o.Partition] = kgo.NewOffset().At(o.Offset)
			ends[topic][o.Partition] = end.Offset
			remaining++
		})
	}
	found := map[uint64]bool{}
	if remaining == 0 {
		return found, nil
	}
	var opts []kgo.Opt
	for _, o := range pcl.Opts() {
		switch o.(type) {
		case kgo.ProducerOpt, kgo.ConsumerOpt, kgo.GroupOpt:
			continue
		}
		opts = append(opts, o)
	}
	// Only what read_committed readers see was written: a copy the
	// transactional mirror left in an aborted transaction is not there.
	// Markers come as control records, so that a partition ending in one
	// is seen to be read to its end.
	cl, err := kgo.NewClient(append(opts, kgo.ConsumePartitions(parts),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())...)
	if err != nil {
		return nil, fmt.Errorf("audit WAL: client to look for records: %w", err)
	}
	defer cl.Close()
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("audit WAL: looking for %d records in the brokers: %w", len(ins), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := ends[r.Topic][r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			if r.Offset+1 >= end {
				delete(ends[r.Topic], r.Partition)
				remaining--
			}
			if r.Attrs.IsControl() {
				return
			}
			h := recordHash(r)
			if seqs := want[r.Topic][h]; len(seqs) > 0 {
				found[seqs[0]] = true
				want[r.Topic][h] = seqs[1:]
			}
		})
	}
	return found, nil
}
