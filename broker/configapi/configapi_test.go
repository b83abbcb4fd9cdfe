package configapi

import (
	"slices"
	"testing"

	"github.com/tributary-io/tributary/broker/kafkaapi"
)

// TestRegisterAddsEveryConfigAPI: Register puts each API of this package
// in the broker's registry, and New needs nothing served to build them
// (the broker builds its registry before it serves).
func TestRegisterAddsEveryConfigAPI(t *testing.T) {
	r := kafkaapi.NewRegistry()
	New(Config{}).Register(r)
	want := []int16{32, 33, 44} // DescribeConfigs, AlterConfigs, IncrementalAlterConfigs
	if got := r.Keys(); !slices.Equal(got, want) {
		t.Fatalf("registered keys %v, want %v", got, want)
	}
}
