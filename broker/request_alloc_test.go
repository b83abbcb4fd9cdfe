package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaapi"
)

// apiRequestSink keeps APIRequest's result from being optimized away.
var apiRequestSink *kafkaapi.Request

// TestAPIRequestAllocatesNothing: Produce and Fetch are served by
// broker/dataapi, which gets the root's request as a kafkaapi.Request;
// making one per request would add an allocation to every produce and
// fetch, so the root fills it in its request and hands out a pointer.
func TestAPIRequestAllocatesNothing(t *testing.T) {
	req := &request{Request: kmsg.NewPtrProduceRequest(), correlationID: 7, clientID: "c", principal: "User:a", host: "10.0.0.1"}
	if n := testing.AllocsPerRun(100, func() { apiRequestSink = req.APIRequest() }); n != 0 {
		t.Fatalf("APIRequest allocates %v times per request, want 0", n)
	}
	got := req.APIRequest()
	if got.CorrelationID != 7 || got.ClientID != "c" || got.Principal != "User:a" || got.Host != "10.0.0.1" || got.Request != req.Request {
		t.Fatalf("APIRequest %+v does not carry the request's header and client", got)
	}
}
