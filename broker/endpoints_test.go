package broker_test

import (
	"testing"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
)

// TestRegistryEndpoints: a broker registers every endpoint and keeps
// host/port of its PLAINTEXT one for older readers; a registration written
// before listeners existed is a PLAINTEXT endpoint only.
func TestRegistryEndpoints(t *testing.T) {
	eps := []cluster.Endpoint{{Listener: "SASL_SSL", Host: "h", Port: 9093}, {Listener: "PLAINTEXT", Host: "h", Port: 9092}}
	self := broker.SelfWithEndpoints(cluster.Broker{ID: 1}, eps)
	if self.Host != "h" || self.Port != 9092 {
		t.Errorf("host/port %s:%d, want the PLAINTEXT endpoint h:9092", self.Host, self.Port)
	}
	if h, p, ok := self.Endpoint("SASL_SSL"); !ok || h != "h" || p != 9093 {
		t.Errorf("SASL_SSL endpoint %s:%d %v", h, p, ok)
	}
	if _, _, ok := self.Endpoint("SSL"); ok {
		t.Error("a broker without an SSL listener has an SSL endpoint")
	}
	old := cluster.Broker{ID: 2, Host: "o", Port: 1}
	if h, p, ok := old.Endpoint("PLAINTEXT"); !ok || h != "o" || p != 1 {
		t.Errorf("old registration's PLAINTEXT endpoint %s:%d %v", h, p, ok)
	}
	if _, _, ok := old.Endpoint("SASL_SSL"); ok {
		t.Error("an old registration claims a SASL_SSL endpoint")
	}
}
