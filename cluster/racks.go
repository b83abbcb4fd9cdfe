package cluster

// Rack-aware placement: when brokers say which rack (or zone) they run
// in, a partition's replicas go to as many different racks as there are,
// so losing a whole rack loses no partition while rf exceeds the number
// of replicas per rack. As Kafka does, the brokers are put in an order
// that alternates racks (rack a's first broker, rack b's first, ...,
// rack a's second, ...); leaders are spread round-robin over that order,
// and each partition's followers are the next brokers in it whose rack
// holds no replica of the partition yet, any broker once every rack
// holds one. A broker without a rack counts as one rack of its own kind
// (""), so a cluster that names racks for some brokers only still places.

import (
	"slices"
	"sort"
)

// hasRacks reports whether any broker names its rack.
func hasRacks(brokers []Broker) bool {
	return slices.ContainsFunc(brokers, func(b Broker) bool { return b.Rack != "" })
}

// rackAlternated orders brokers so that consecutive ones sit in different
// racks while possible: racks by name, brokers of a rack by id.
func rackAlternated(brokers []Broker) []Broker {
	byRack := map[string][]Broker{}
	for _, b := range brokers {
		byRack[b.Rack] = append(byRack[b.Rack], b)
	}
	racks := make([]string, 0, len(byRack))
	for r, bs := range byRack {
		racks = append(racks, r)
		sort.Slice(bs, func(i, j int) bool { return bs[i].ID < bs[j].ID })
	}
	sort.Strings(racks)
	out := make([]Broker, 0, len(brokers))
	for i := 0; len(out) < len(brokers); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}

// spreadOverRacks is SpreadReplicas for brokers that name racks.
func spreadOverRacks(name string, partitions int32, rf int, brokers []Broker) [][]int32 {
	order := rackAlternated(brokers)
	racks := map[string]bool{}
	for _, b := range order {
		racks[b.Rack] = true
	}
	start := int(nameHash(name) % uint32(len(order)))
	replicas := make([][]int32, partitions)
	for p := range replicas {
		at := (start + p) % len(order)
		chosen := []int32{order[at].ID}
		used := map[string]bool{order[at].Rack: true}
		for step := 1; len(chosen) < rf; step++ {
			b := order[(at+step)%len(order)]
			// After one full turn every rack was tried: take any broker.
			if slices.Contains(chosen, b.ID) || used[b.Rack] && len(used) < len(racks) && step < len(order) {
				continue
			}
			chosen = append(chosen, b.ID)
			used[b.Rack] = true
		}
		replicas[p] = chosen
	}
	return replicas
}
