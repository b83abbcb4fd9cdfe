package clusterapi

import (
	"slices"
	"testing"

	"github.com/tributary-io/tributary/broker/kafkaapi"
)

// TestRegisterAddsEveryClusterAPI: Register puts each API of this package
// in the broker's registry, and New needs nothing served to build them
// (the broker builds its registry before it serves).
func TestRegisterAddsEveryClusterAPI(t *testing.T) {
	r := kafkaapi.NewRegistry()
	New(Config{}).Register(r)
	// ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments.
	want := []int16{43, 45, 46}
	if got := r.Keys(); !slices.Equal(got, want) {
		t.Fatalf("registered keys %v, want %v", got, want)
	}
}
