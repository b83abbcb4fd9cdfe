package securityapi

import (
	"slices"
	"testing"

	"github.com/tributary-io/tributary/broker/kafkaapi"
)

// TestRegisterAddsEverySecurityAPI: Register puts each API of this package
// in the broker's registry, and New needs nothing served to build them
// (the broker builds its registry before it serves).
func TestRegisterAddsEverySecurityAPI(t *testing.T) {
	r := kafkaapi.NewRegistry()
	New(Config{}).Register(r)
	// DescribeAcls, CreateAcls, DeleteAcls, DescribeClientQuotas,
	// AlterClientQuotas, DescribeUserScramCredentials,
	// AlterUserScramCredentials.
	want := []int16{29, 30, 31, 48, 49, 50, 51}
	if got := r.Keys(); !slices.Equal(got, want) {
		t.Fatalf("registered keys %v, want %v", got, want)
	}
}
