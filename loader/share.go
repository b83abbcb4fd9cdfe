package loader

import (
	"errors"
	"math/rand/v2"
	"slices"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// Loaders that share a topic set (Config.Share): each run takes the locks
// of the topics that are free, skips those another run holds, and takes
// at most Config.MaxTopics of them in a random order, so that several
// loader processes started on the same topics (on several machines, or
// from a scheduler each) divide them without talking to each other. The
// topic locks stay what keeps two runs off one topic; sharing only decides
// which locks a run asks for and what a refusal means.

// SkippedTopic is a topic a sharing run left to the run holding it.
type SkippedTopic struct {
	Topic  string `json:"topic"`
	Holder string `json:"holder"`
}

// lockOrder is the order a run asks for its topics' locks in: sorted, or
// with MaxTopics shuffled, so that runs started together pick different
// topics first.
func (r *run) lockOrder(topics []string) []string {
	if !r.cfg.Share || r.cfg.MaxTopics <= 0 {
		return topics
	}
	order := slices.Clone(topics)
	rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}

// skipLocked reports whether a failure to take topic's lock means only
// that another run holds it, which a sharing run notes and passes over.
func (r *run) skipLocked(topic string, err error) bool {
	var held *warehouse.LockedError
	if !r.cfg.Share || !errors.As(err, &held) {
		return false
	}
	r.sum.Skipped = append(r.sum.Skipped, SkippedTopic{Topic: topic, Holder: held.Error()})
	return true
}

// heldTopics is topics less those the run did not lock, in their order.
func (r *run) heldTopics(topics []string) []string {
	var out []string
	for _, t := range topics {
		if r.held[t] {
			out = append(out, t)
		}
	}
	return out
}
