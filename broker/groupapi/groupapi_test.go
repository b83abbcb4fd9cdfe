package groupapi

import (
	"slices"
	"testing"

	"github.com/tributary-io/tributary/broker/kafkaapi"
)

// TestRegisterAddsEveryGroupAPI: Register puts each group API of this
// package in the broker's registry, and New needs nothing served to build
// them (the broker builds its registry before it serves).
func TestRegisterAddsEveryGroupAPI(t *testing.T) {
	r := kafkaapi.NewRegistry()
	New(Config{}).Register(r)
	// OffsetCommit, OffsetFetch, JoinGroup, Heartbeat, LeaveGroup,
	// SyncGroup, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete,
	// ConsumerGroupHeartbeat, ConsumerGroupDescribe.
	want := []int16{8, 9, 11, 12, 13, 14, 15, 16, 42, 47, 68, 69}
	if got := r.Keys(); !slices.Equal(got, want) {
		t.Fatalf("registered keys %v, want %v", got, want)
	}
}
