package kafkaapi

import (
	"testing"

	"github.com/tributary-io/tributary/broker/netserver"
)

// A package's declared APIs are registered with the handlers given at
// Register, so two brokers' registries serve with their own handlers.
func TestAPIsRegisterWithTheirHandlers(t *testing.T) {
	var apis APIs[*string]
	var served []string
	serve := func(h *string) Serve {
		return func(Conn, *Request) *netserver.Pending { served = append(served, *h); return nil }
	}
	apis.Add(18, 0, 4, serve)
	apis.Add(3, 0, 12, serve)
	one, two := "one", "two"
	r1, r2 := NewRegistry(), NewRegistry()
	apis.Register(r1, &one)
	apis.Register(r2, &two)
	if !r1.Supports(18, 4) || !r1.Supports(3, 12) || r1.Supports(3, 13) {
		t.Fatalf("registry keys %v: want 18 v0-4 and 3 v0-12", r1.Keys())
	}
	a1, _ := r1.Lookup(3)
	a2, _ := r2.Lookup(3)
	a1.Serve(nil, nil)
	a2.Serve(nil, nil)
	if len(served) != 2 || served[0] != "one" || served[1] != "two" {
		t.Fatalf("served by %v, want one then two", served)
	}
}
