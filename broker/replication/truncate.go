package replication

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
// ends. A fetcher asks about all the partitions it is to check in one
// request per exchange, not one per partition.

import (
	"errors"
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

// epochCheck is one partition whose log is being compared with its
// leader's before the follower fetches it in leaderEpoch.
type epochCheck struct {
	key         partKey
	t           cluster.Topic
	l           *log.Log
	leaderEpoch int32
	ask         int32 // the epoch of ours asked about next
}

// epochAnswer is the leader's answer for one partition: where its epoch
// at or below the asked one ends, or why it could not say.
type epochAnswer struct {
	epoch int32
	end   int64
	err   error
}

// truncateToLeader makes the logs of checks a prefix of the leader's. The
// partitions are asked about together, one OffsetForLeaderEpoch request
// per exchange for all of them (a restarted follower checks every
// partition it follows at once), and each exchange carries only the
// partitions still unsettled. It returns the partitions it settled; one
// the leader could not answer for yet (errEpochUnsettled) is left out, to
// be checked in a later round.
func (f *fetcher) truncateToLeader(c *PeerConn, checks []epochCheck) ([]epochCheck, error) {
	var settled, pending []epochCheck
	for _, ec := range checks {
		if ec.ask = ec.l.LatestEpoch(); ec.ask < 0 {
			settled = append(settled, ec) // a log written before epochs were recorded: nothing to compare
		} else {
			pending = append(pending, ec)
		}
	}
	for range maxEpochRounds {
		if len(pending) == 0 {
			return settled, nil
		}
		answers, err := f.askEpochEnds(c, pending)
		if err != nil {
			return settled, err
		}
		var next []epochCheck
		for _, ec := range pending {
			a := answers[ec.key]
			if errors.Is(a.err, errEpochUnsettled) {
				continue
			}
			if a.err != nil {
				return settled, a.err
			}
			done, err := f.cutToAnswer(&ec, a)
			if err != nil {
				return settled, err
			}
			if done {
				settled = append(settled, ec)
			} else {
				next = append(next, ec)
			}
		}
		pending = next
	}
	if len(pending) == 0 {
		return settled, nil
	}
	k := pending[0].key
	return settled, fmt.Errorf("%s-%d (and %d more): no common leader epoch with leader %d after %d rounds", k.topic, k.p, len(pending)-1, f.leader, maxEpochRounds)
}

// cutToAnswer truncates one partition by the leader's answer, or, when
// the leader named an epoch this log lacks, moves ec.ask to an older one
// of ours and returns false to ask again.
func (f *fetcher) cutToAnswer(ec *epochCheck, a epochAnswer) (bool, error) {
	e, l, topic, p := f.rs.env, ec.l, ec.key.topic, ec.key.p
	if a.end < 0 {
		// The leader knows no epoch at or above ours: it holds only
		// records of older epochs or none with epochs at all.
		e.logger.Warn("the leader knows none of this follower's leader epochs; not truncating",
			"topic", topic, "partition", p, "leader", f.leader, "follower_epoch", ec.ask)
		return true, nil
	}
	mine, myEnd := l.EndOffsetForEpoch(a.epoch)
	if mine != a.epoch && mine >= 0 && mine < ec.ask {
		ec.ask = mine // we lack the leader's epoch: compare an older one of ours
		return false, nil
	}
	cut := min(a.end, myEnd)
	if mine < 0 {
		cut = a.end // epochs of ours all newer than the leader's answer
	}
	if cut >= l.LogEndOffset() {
		return true, nil
	}
	was := l.LogEndOffset()
	got, err := l.TruncateTo(cut)
	if err != nil {
		return false, fmt.Errorf("truncating %s-%d to offset %d: %w", topic, p, cut, err)
	}
	e.logger.Warn("follower truncated its log to its leader's", "topic", topic, "partition", p,
		"leader", f.leader, "leader_epoch", ec.leaderEpoch, "epoch", a.epoch, "from", was, "to", got)
	return true, nil
}

// askEpochEnds is one OffsetForLeaderEpoch exchange for the partitions of
// checks, each asked about its ec.ask. A partition the leader refused
// gets its error in its answer; only a failed exchange is an error.
func (f *fetcher) askEpochEnds(c *PeerConn, checks []epochCheck) (map[partKey]epochAnswer, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = 3 // the last with a v0 response header
	req.ReplicaID = f.rs.env.selfID
	byTopic := map[string]int{}
	for _, ec := range checks {
		i, ok := byTopic[ec.key.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[ec.key.topic] = i
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = ec.key.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = ec.key.p, ec.leaderEpoch, ec.ask
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	resp.Version = req.Version
	f.rs.epochRequests.Add(1)
	if err := c.RoundTrip(req, resp, 10*time.Second); err != nil {
		return nil, err
	}
	answers := make(map[partKey]epochAnswer, len(checks))
	for _, t := range resp.Topics {
		for _, sp := range t.Partitions {
			a := epochAnswer{epoch: sp.LeaderEpoch, end: sp.EndOffset}
			switch err := kerr.ErrorForCode(sp.ErrorCode); {
			case err == nil:
			case kerr.IsRetriable(err), err == kerr.FencedLeaderEpoch, err == kerr.UnknownLeaderEpoch:
				a.err = errEpochUnsettled
			default:
				a.err = fmt.Errorf("leader %d refused OffsetForLeaderEpoch for %s-%d: %w", f.leader, t.Topic, sp.Partition, err)
			}
			answers[partKey{t.Topic, sp.Partition}] = a
		}
	}
	for _, ec := range checks {
		if _, ok := answers[ec.key]; !ok {
			answers[ec.key] = epochAnswer{err: fmt.Errorf("leader %d did not answer OffsetForLeaderEpoch for %s-%d", f.leader, ec.key.topic, ec.key.p)}
		}
	}
	return answers, nil
}
