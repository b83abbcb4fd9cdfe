package broker_test

import (
	"reflect"
	"testing"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
)

func TestParseListeners(t *testing.T) {
	for _, c := range []struct {
		in, advertised string
		want           []broker.Listener
		wantErr        bool
	}{
		{in: "PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9093", want: []broker.Listener{
			{Protocol: broker.Plaintext, Addr: "127.0.0.1:9092"}, {Protocol: broker.SASLSSL, Addr: "127.0.0.1:9093"}}},
		{in: "ssl://:9093", advertised: "SSL://kafka.example.com:443", want: []broker.Listener{
			{Protocol: broker.SSL, Addr: ":9093", Advertised: "kafka.example.com:443"}}},
		{in: "SASL_PLAINTEXT://0.0.0.0:9094", want: []broker.Listener{{Protocol: broker.SASLPlaintext, Addr: "0.0.0.0:9094"}}},
		{in: "HTTP://127.0.0.1:80", wantErr: true},
		{in: "127.0.0.1:9092", wantErr: true},
		{in: "PLAINTEXT://a:1,PLAINTEXT://b:2", wantErr: true},
		{in: "PLAINTEXT://nohost", wantErr: true},
		{in: "PLAINTEXT://127.0.0.1:9092", advertised: "SSL://x:1", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := broker.ParseListeners(c.in)
		if err == nil && c.advertised != "" {
			err = broker.Advertise(got, c.advertised)
		}
		if (err != nil) != c.wantErr || (err == nil && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("%q (advertised %q): got %+v, %v; want %+v (error %v)", c.in, c.advertised, got, err, c.want, c.wantErr)
		}
	}
}

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
