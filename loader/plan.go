package loader

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"
)

// partPlan is what a run does on one partition.
type partPlan struct {
	topic      string
	part       int32
	start, end int64 // read [start, end)
	next       int64 // first offset not yet handed to the writer
	inputBytes int64
	records    int64
	prev       *PartitionState
	writer     *partWriter
	in         chan *chunk
	done       bool

	// The fetch loop's: where to fetch next (past every whole batch
	// walked, markers included), and from whom.
	fetchAt  int64
	leader   int32 // broker id; -1 until the metadata names one
	epoch    int32
	topicID  [16]byte
	inFlight bool
}

// resolveTopics returns the topics to load, sorted, checking that named
// ones exist.
func (r *run) resolveTopics(ctx context.Context) ([]string, error) {
	tctx, cancel := context.WithTimeout(ctx, r.cfg.BrokerTimeout)
	defer cancel()
	details, err := r.adm.ListTopics(tctx)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the brokers at %v: %w", r.cfg.Brokers, err)
	}
	var topics []string
	for _, t := range r.cfg.Topics {
		d, ok := details[t]
		if !ok || d.Err != nil {
			return nil, fmt.Errorf("topic %q does not exist on the brokers at %v", t, r.cfg.Brokers)
		}
		topics = append(topics, t)
	}
	if r.cfg.TopicRegex != "" {
		re := regexp.MustCompile("^(?:" + r.cfg.TopicRegex + ")$") // checked by withDefaults
		for name, d := range details {
			if d.Err == nil && !d.IsInternal && name[0] != '_' && re.MatchString(name) && !slices.Contains(topics, name) {
				topics = append(topics, name)
			}
		}
		if len(topics) == 0 {
			return nil, fmt.Errorf("no topic on the brokers at %v matches %q", r.cfg.Brokers, r.cfg.TopicRegex)
		}
	}
	sort.Strings(topics)
	return topics, nil
}

// plan lists each partition's log start and high watermark and decides
// where to read from, recording any range retention deleted before it was
// loaded.
func (r *run) plan(ctx context.Context, topics []string, state map[string]*TopicState) ([]*partPlan, []LostRange, time.Time, error) {
	tctx, cancel := context.WithTimeout(ctx, r.cfg.BrokerTimeout)
	defer cancel()
	listedAt := r.cfg.Now()
	starts, err := r.adm.ListStartOffsets(tctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, nil, listedAt, fmt.Errorf("listing log start offsets on the brokers at %v: %w", r.cfg.Brokers, err)
	}
	// The last stable offsets: a run loads what committed readers see,
	// and does not wait on a transaction still open.
	ends, err := r.adm.ListCommittedOffsets(tctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, nil, listedAt, fmt.Errorf("listing last stable offsets on the brokers at %v: %w", r.cfg.Brokers, err)
	}
	var plans []*partPlan
	var lost []LostRange
	for _, t := range topics {
		parts := starts[t]
		ids := make([]int32, 0, len(parts))
		for p := range parts {
			ids = append(ids, p)
		}
		slices.Sort(ids)
		for _, p := range ids {
			logStart := parts[p].Offset
			end, ok := ends.Lookup(t, p)
			if !ok {
				return nil, nil, listedAt, fmt.Errorf("%s/%d: no last stable offset listed", t, p)
			}
			pl := &partPlan{topic: t, part: p, end: end.Offset}
			var prev *PartitionState
			if ts := state[t]; ts != nil {
				prev = ts.Partitions[p]
			}
			pl.prev = prev
			switch {
			case prev == nil:
				pl.start = logStart
				if r.cfg.StartAt == Latest {
					pl.start = end.Offset
				}
			case prev.Next < logStart:
				l := LostRange{Topic: t, Partition: p, From: prev.Next, To: logStart - 1,
					Reason: "deleted from the log (by retention or DeleteRecords) before it was loaded"}
				pl.start = logStart
				if r.cfg.OnDataLoss == Latest {
					l.To = end.Offset - 1
					l.Reason += "; skipped to the high watermark (on data loss: latest)"
					pl.start = end.Offset
				}
				if r.cfg.OnDataLoss == Fail {
					return nil, nil, listedAt, fmt.Errorf("data loss: %s (on data loss: fail; rerun with earliest or latest to continue)", l)
				}
				r.log.Error("records lost before they were loaded", "topic", t, "partition", p, "from", l.From, "to", l.To)
				lost = append(lost, l)
			case prev.Next > end.Offset:
				l := LostRange{Topic: t, Partition: p, From: end.Offset, To: prev.Next - 1,
					Reason: "the log ends below the committed offset (topic recreated or truncated); restarting from its log start"}
				if r.cfg.OnDataLoss == Fail {
					return nil, nil, listedAt, fmt.Errorf("offset mismatch: %s (on data loss: fail)", l)
				}
				pl.start = logStart
				if r.cfg.OnDataLoss == Latest {
					pl.start = end.Offset
					l.Reason = "the log ends below the committed offset (topic recreated or truncated); continuing from its high watermark"
				}
				r.log.Error("committed offset past the end of the log", "topic", t, "partition", p, "committed", prev.Next, "end", end.Offset)
				lost = append(lost, l)
			default:
				pl.start = prev.Next
			}
			pl.next = pl.start
			plans = append(plans, pl)
		}
	}
	return plans, lost, listedAt, nil
}
