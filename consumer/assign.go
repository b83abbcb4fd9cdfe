package consumer

import (
	"slices"
	"sort"
)

// Range is the heart of the paper's Algorithm 1 for one topic: with the
// available partitions and the subscribed consumers both sorted, consumer j
// of n takes a contiguous run of partitions. Every consumer computes it
// independently from the same registries, so they agree without talking to
// each other.
//
// With P partitions, N = P/n and r = P%n: the first r consumers take N+1
// partitions and the others N, so consumer j starts at j*N + min(j, r). (The
// paper writes j*N … (j+1)*N-1 and leaves the remainder open; giving it to
// the lowest ids keeps the rule deterministic and the sizes within one.)
//
// It returns nil when self is not among consumers, or when there are more
// consumers than partitions and self is one of the idle ones.
func Range(partitions []int32, consumers []string, self string) []int32 {
	ps := slices.Clone(partitions)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	cs := slices.Clone(consumers)
	sort.Strings(cs)
	cs = slices.Compact(cs)
	j := slices.Index(cs, self)
	if j < 0 || len(ps) == 0 {
		return nil
	}
	n := len(cs)
	per, rem := len(ps)/n, len(ps)%n
	start := j*per + min(j, rem)
	count := per
	if j < rem {
		count++
	}
	if count == 0 {
		return nil
	}
	return ps[start : start+count]
}

// Assign runs Range for every topic self subscribes to. partitions maps a
// topic to its available partitions; subscribers maps it to the ids of the
// consumers of the group that subscribe to it.
func Assign(partitions map[string][]int32, subscribers map[string][]string, self string) map[string][]int32 {
	out := map[string][]int32{}
	for topic, ps := range partitions {
		if mine := Range(ps, subscribers[topic], self); len(mine) > 0 {
			out[topic] = mine
		}
	}
	return out
}
