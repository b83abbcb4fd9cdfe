package saslapi

import (
	"slices"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/kafkaapi"
)

// TestRegisterAddsTheExchange: SaslHandshake (v0 listed for librdkafka)
// and SaslAuthenticate, built with nothing served.
func TestRegisterAddsTheExchange(t *testing.T) {
	r := kafkaapi.NewRegistry()
	New(Config{}).Register(r)
	if got := r.Keys(); !slices.Equal(got, []int16{17, 36}) {
		t.Fatalf("registered keys %v, want [17 36]", got)
	}
	if !r.Supports(17, 0) || !r.Supports(36, 2) {
		t.Fatal("SaslHandshake v0 or SaslAuthenticate v2 not served")
	}
}

// TestOnlyTheExchangeComesBeforeLogin: ApiVersions and the two SASL APIs,
// nothing else (Metadata, Produce).
func TestOnlyTheExchangeComesBeforeLogin(t *testing.T) {
	for key, want := range map[int16]bool{18: true, 17: true, 36: true, 3: false, 0: false, 1: false} {
		if BeforeLogin(key) != want {
			t.Errorf("BeforeLogin(%d) = %v, want %v", key, !want, want)
		}
	}
}

// TestSessionEnds: a session without a limit never ends; one with a limit
// ends at its end, not before.
func TestSessionEnds(t *testing.T) {
	var ss Session
	now := time.Now()
	if ss.Expired(now.Add(time.Hour)) {
		t.Fatal("a session without a limit expired")
	}
	h := New(Config{MaxReauth: time.Minute})
	if ms := h.startSession(&ss); ms != time.Minute.Milliseconds() {
		t.Fatalf("session lifetime %d ms, want a minute", ms)
	}
	if ss.Expired(time.Now()) || !ss.Expired(ss.Expires()) || !ss.Expired(ss.Expires().Add(time.Second)) {
		t.Fatalf("a session ending at %v judged wrongly", ss.Expires())
	}
}
