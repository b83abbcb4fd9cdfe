package broker

// Truncation by leader epoch, the follower's side (KIP-101, KIP-279).
//
// A broker that led a partition may have appended records that reached no
// follower before it lost the leadership; its successor then wrote other
// records at those offsets. Before a follower fetches a partition in a new
// leader epoch it asks the leader (OffsetForLeaderEpoch) where its own
// latest epoch ends in the leader's log, and cuts its log there: what it
// held past that point was never replicated. When the leader does not know
// that epoch it answers with the end of the newest epoch it knows below
// it; the follower asks again with its own epoch at or below that one,
// until both name the same epoch, and truncates to the smaller of the two
// ends.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

// maxEpochRounds bounds the OffsetForLeaderEpoch exchanges for one
// partition; each round goes to an older epoch, so few are ever needed.
const maxEpochRounds = 16

// errEpochUnsettled: the leader could not answer for the partition yet (it
// does not know it leads it, or its epoch differs from the one this
// follower saw); the partition waits for the next round.
var errEpochUnsettled = fmt.Errorf("the leader cannot answer for the leader epoch yet")

// truncateToLeader makes l's log a prefix of the leader's before the
// follower fetches it in leaderEpoch.
func (f *fetcher) truncateToLeader(c *replicaConn, t cluster.Topic, p int32, leaderEpoch int32, l *log.Log) error {
	b := f.rs.b
	ask := l.LatestEpoch()
	if ask < 0 {
		return nil // a log written before epochs were recorded: nothing to compare
	}
	for range maxEpochRounds {
		epoch, end, err := f.askEpochEnd(c, t.Name, p, leaderEpoch, ask)
		if err != nil {
			return err
		}
		if end < 0 {
			// The leader knows no epoch at or above ours: it holds only
			// records of older epochs or none with epochs at all.
			b.logger.Warn("the leader knows none of this follower's leader epochs; not truncating",
				"topic", t.Name, "partition", p, "leader", f.leader, "follower_epoch", ask)
			return nil
		}
		mine, myEnd := l.EndOffsetForEpoch(epoch)
		if mine != epoch && mine >= 0 && mine < ask {
			ask = mine // we lack the leader's epoch: compare an older one of ours
			continue
		}
		cut := min(end, myEnd)
		if mine < 0 {
			cut = end // epochs of ours all newer than the leader's answer
		}
		if cut >= l.LogEndOffset() {
			return nil
		}
		was := l.LogEndOffset()
		got, err := l.TruncateTo(cut)
		if err != nil {
			return fmt.Errorf("truncating %s-%d to offset %d: %w", t.Name, p, cut, err)
		}
		b.logger.Warn("follower truncated its log to its leader's", "topic", t.Name, "partition", p,
			"leader", f.leader, "leader_epoch", leaderEpoch, "epoch", epoch, "from", was, "to", got)
		return nil
	}
	return fmt.Errorf("%s-%d: no common leader epoch with leader %d after %d rounds", t.Name, p, f.leader, maxEpochRounds)
}

// askEpochEnd is one OffsetForLeaderEpoch exchange for one partition.
func (f *fetcher) askEpochEnd(c *replicaConn, topic string, p, current, epoch int32) (int32, int64, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = 3 // the last with a v0 response header
	req.ReplicaID = f.rs.b.selfID
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p, current, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	resp.Version = req.Version
	if err := c.roundTrip(req, resp, 10*time.Second); err != nil {
		return 0, 0, err
	}
	for _, t := range resp.Topics {
		for _, sp := range t.Partitions {
			if t.Topic != topic || sp.Partition != p {
				continue
			}
			switch err := kerr.ErrorForCode(sp.ErrorCode); {
			case err == nil:
				return sp.LeaderEpoch, sp.EndOffset, nil
			case kerr.IsRetriable(err), err == kerr.FencedLeaderEpoch, err == kerr.UnknownLeaderEpoch:
				return 0, 0, errEpochUnsettled
			default:
				return 0, 0, fmt.Errorf("leader %d refused OffsetForLeaderEpoch for %s-%d: %w", f.leader, topic, p, err)
			}
		}
	}
	return 0, 0, fmt.Errorf("leader %d did not answer OffsetForLeaderEpoch for %s-%d", f.leader, topic, p)
}
