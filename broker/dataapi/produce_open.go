package dataapi

// Opening a produce's partitions ahead of its appends. The first write to
// a partition opens its log, creating it (a directory and an fsync of the
// data directory); in the loop of produce, one Lookup after the other, a
// request naming thousands of partitions nothing had written yet (the
// first acks=all record to each partition of new topics) created their
// logs in turn. So before the loop reaches a partition whose log is not
// open, the next openAhead such partitions of the request are opened
// together (replication.Manager.OpenTogether, a few at a time). A window
// rather than all at once: a request may name more partitions than the
// descriptor budget keeps open, and those opened first would be parked
// again before the loop reached them.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/partition"
	"github.com/tributary-io/tributary/broker/replication"
	"github.com/tributary-io/tributary/cluster"
)

// openAhead is how many of a request's unopened partitions are opened
// together when the loop reaches the first of them.
const openAhead = 256

// topicLookup is a produced topic's refusal and lookup, made before the
// partitions are opened.
type topicLookup struct {
	refusal string
	t       cluster.Topic
	code    int16
}

// lookupTopics does, for each topic of r in turn, the refusal check and
// the lookup (which may auto-create it) that the loop of produce would,
// appending to looks.
func (h *Handlers) lookupTopics(req *kafkaapi.Request, r *kmsg.ProduceRequest, looks []topicLookup) []topicLookup {
	for _, rt := range r.Topics {
		var l topicLookup
		// The refusal comes before the lookup, as in Kafka, so that a
		// client that may not write learns nothing of whether the topic
		// exists (UNKNOWN_TOPIC_OR_PARTITION against
		// TOPIC_AUTHORIZATION_FAILED), nor auto-creates it.
		if l.refusal = h.produceRefusal(req, rt.Topic); l.refusal == "" {
			l.t, l.code = h.topics.Lookup(rt.Topic, h.authz.MayCreateTopic(req.Who, rt.Topic))
		}
		looks = append(looks, l)
	}
	return looks
}

// aheadOpener opens a request's unopened partitions, in request order,
// openAhead at a time as the loop reaches them. A nil one opens nothing.
type aheadOpener struct {
	replicas *replication.Manager
	want     []partition.Want // the unopened partitions, in request order
	next     int              // want[:next] are opened (or were tried)
}

// newAheadOpener lists the partitions of r that the loop would append to
// and whose logs are not open; nil when there are fewer than two (one is
// opened by its Lookup as before) or none may be appended to. looks is
// r's lookupTopics.
func (h *Handlers) newAheadOpener(r *kmsg.ProduceRequest, looks []topicLookup, txnRefused bool) *aheadOpener {
	if (r.Acks != 0 && r.Acks != 1 && r.Acks != -1) || r.Version < 3 || txnRefused {
		return nil
	}
	n := 0
	for _, rt := range r.Topics {
		n += len(rt.Partitions)
	}
	if n < 2 {
		return nil
	}
	var want []partition.Want
	for i, rt := range r.Topics {
		l := &looks[i]
		if l.refusal != "" || l.code != 0 {
			continue
		}
		for _, rp := range rt.Partitions {
			if h.replicas.Unopened(l.t, rp.Partition) {
				want = append(want, partition.Want{Topic: l.t, Partition: rp.Partition})
			}
		}
	}
	if len(want) < 2 {
		return nil
	}
	return &aheadOpener{replicas: h.replicas, want: want}
}

// before is called as the loop reaches topic's partition p, before its
// Lookup: if it is the next unopened partition, it and those after it, up
// to openAhead, are opened together.
func (o *aheadOpener) before(topic string, p int32) {
	if o == nil || o.next >= len(o.want) {
		return
	}
	if w := o.want[o.next]; w.Topic.Name != topic || w.Partition != p {
		return
	}
	end := min(len(o.want), o.next+openAhead)
	o.replicas.OpenTogether(o.want[o.next:end])
	o.next = end
}
