package netserver_test

import (
	"reflect"
	"testing"

	"github.com/tributary-io/tributary/broker/netserver"
)

// TestParseListeners: listeners and advertised listeners as Kafka writes
// them, one per protocol; anything else is refused.
func TestParseListeners(t *testing.T) {
	for _, c := range []struct {
		in, advertised string
		want           []netserver.Listener
		wantErr        bool
	}{
		{in: "PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9093", want: []netserver.Listener{
			{Protocol: netserver.Plaintext, Addr: "127.0.0.1:9092"}, {Protocol: netserver.SASLSSL, Addr: "127.0.0.1:9093"}}},
		{in: "ssl://:9093", advertised: "SSL://kafka.example.com:443", want: []netserver.Listener{
			{Protocol: netserver.SSL, Addr: ":9093", Advertised: "kafka.example.com:443"}}},
		{in: "SASL_PLAINTEXT://0.0.0.0:9094", want: []netserver.Listener{{Protocol: netserver.SASLPlaintext, Addr: "0.0.0.0:9094"}}},
		{in: "HTTP://127.0.0.1:80", wantErr: true},
		{in: "127.0.0.1:9092", wantErr: true},
		{in: "PLAINTEXT://a:1,PLAINTEXT://b:2", wantErr: true},
		{in: "PLAINTEXT://nohost", wantErr: true},
		{in: "PLAINTEXT://127.0.0.1:9092", advertised: "SSL://x:1", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := netserver.ParseListeners(c.in)
		if err == nil && c.advertised != "" {
			err = netserver.Advertise(got, c.advertised)
		}
		if (err != nil) != c.wantErr || (err == nil && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("%q (advertised %q): got %+v, %v; want %+v (error %v)", c.in, c.advertised, got, err, c.want, c.wantErr)
		}
	}
}
