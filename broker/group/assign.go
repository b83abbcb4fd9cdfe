package group

// Server-side assignors of the consumer group protocol. Both are
// deterministic (members in id order), so that every computation of a
// target from the same inputs gives the same answer.
//
//   - uniform (the default): partition counts differ by at most one
//     between members subscribed to the same topics, and a partition stays
//     with the member that had it in the previous target when that keeps the
//     balance, so that a membership change moves few partitions.
//   - range: per topic, members sorted by id take contiguous ranges, the
//     first ones one partition more; members subscribed to the same topics
//     get the same partition numbers of each (co-partitioned joins).

import (
	"container/heap"
	"sort"
)

// assign computes the target assignment of every member (left static
// members included: their partitions wait for them).
func assign(assignor string, members map[string]*cmember, topics []TopicInfo, prev map[string]tpSet) map[string]tpSet {
	ids := make([]string, 0, len(members))
	for id := range members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make(map[string]tpSet, len(ids))
	for _, id := range ids {
		out[id] = tpSet{}
	}
	if assignor == AssignorRange {
		assignRange(ids, members, topics, out)
	} else {
		assignUniform(ids, members, topics, prev, out)
	}
	return out
}

func subscribers(ids []string, members map[string]*cmember, topic TopicInfo) []string {
	var out []string
	for _, id := range ids {
		if members[id].subscribesTo(topic) {
			out = append(out, id)
		}
	}
	return out
}

func assignRange(ids []string, members map[string]*cmember, topics []TopicInfo, out map[string]tpSet) {
	for _, t := range topics {
		subs := subscribers(ids, members, t)
		if len(subs) == 0 {
			continue
		}
		n, k := int(t.Partitions), len(subs)
		p := 0
		for i, id := range subs {
			take := n / k
			if i < n%k {
				take++
			}
			for j := 0; j < take; j++ {
				out[id][TopicPartition{Topic: t.Name, Partition: int32(p)}] = true
				p++
			}
		}
	}
}

func assignUniform(ids []string, members map[string]*cmember, topics []TopicInfo, prev map[string]tpSet, out map[string]tpSet) {
	// quota: each member's fair share of the topics it subscribes to.
	share := map[string]float64{}
	subsOf := map[string][]string{}
	for _, t := range topics {
		subs := subscribers(ids, members, t)
		subsOf[t.Name] = subs
		for _, id := range subs {
			share[id] += float64(t.Partitions) / float64(len(subs))
		}
	}
	quota := func(id string) int {
		q := int(share[id])
		if float64(q) < share[id] {
			q++
		}
		return q
	}
	// Keep what the previous target gave, up to the quota.
	owner := map[TopicPartition]string{}
	for _, id := range ids {
		kept := make([]TopicPartition, 0, len(prev[id]))
		for tp := range prev[id] {
			kept = append(kept, tp)
		}
		sortTPs(kept)
		for _, tp := range kept {
			if t, ok := topicOf(topics, tp); !ok || len(out[id]) >= quota(id) || !members[id].subscribesTo(t) {
				continue
			}
			out[id][tp] = true
			owner[tp] = id
		}
	}
	// The rest go to the least loaded subscriber, ties by id; then one
	// balancing pass moves a partition whose owner has two more than the
	// least loaded subscriber there. A heap per topic keeps both at
	// O(P log M): a join into a group of 1,000 members over 20,000
	// partitions must not cost P×M.
	for _, t := range topics {
		subs := subsOf[t.Name]
		if len(subs) == 0 {
			continue
		}
		h := newLoadHeap(subs, out)
		for p := int32(0); p < t.Partitions; p++ {
			tp := TopicPartition{Topic: t.Name, Partition: p}
			if owner[tp] != "" {
				continue
			}
			id := h.ids[0]
			out[id][tp] = true
			owner[tp] = id
			heap.Fix(h, 0)
		}
		for p := int32(0); p < t.Partitions; p++ {
			tp := TopicPartition{Topic: t.Name, Partition: p}
			from, to := owner[tp], h.ids[0]
			if len(out[from]) > len(out[to])+1 {
				delete(out[from], tp)
				out[to][tp] = true
				owner[tp] = to
				heap.Fix(h, 0)
				if i, ok := h.pos[from]; ok {
					heap.Fix(h, i)
				}
			}
		}
	}
}

// loadHeap orders members by how many partitions they have, then by id.
type loadHeap struct {
	ids []string
	pos map[string]int
	out map[string]tpSet
}

func newLoadHeap(ids []string, out map[string]tpSet) *loadHeap {
	h := &loadHeap{ids: append([]string(nil), ids...), pos: make(map[string]int, len(ids)), out: out}
	for i, id := range h.ids {
		h.pos[id] = i
	}
	heap.Init(h)
	return h
}

func (h *loadHeap) Len() int { return len(h.ids) }
func (h *loadHeap) Less(i, j int) bool {
	li, lj := len(h.out[h.ids[i]]), len(h.out[h.ids[j]])
	if li != lj {
		return li < lj
	}
	return h.ids[i] < h.ids[j]
}
func (h *loadHeap) Swap(i, j int) {
	h.ids[i], h.ids[j] = h.ids[j], h.ids[i]
	h.pos[h.ids[i]], h.pos[h.ids[j]] = i, j
}
func (h *loadHeap) Push(x any) { h.pos[x.(string)] = len(h.ids); h.ids = append(h.ids, x.(string)) }
func (h *loadHeap) Pop() any {
	id := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	delete(h.pos, id)
	return id
}

// topicOf finds tp's topic in topics (sorted by name), if tp exists.
func topicOf(topics []TopicInfo, tp TopicPartition) (TopicInfo, bool) {
	i := sort.Search(len(topics), func(i int) bool { return topics[i].Name >= tp.Topic })
	if i < len(topics) && topics[i].Name == tp.Topic && tp.Partition >= 0 && tp.Partition < topics[i].Partitions {
		return topics[i], true
	}
	return TopicInfo{}, false
}
