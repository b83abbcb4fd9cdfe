package broker

// Listeners, as Kafka names them (broker/netserver serves them), and the
// endpoints a broker registers for them: every client is told the
// addresses of the listener it came through.

import (
	"net"
	"strconv"

	"github.com/tributary-io/tributary/broker/netserver"
	"github.com/tributary-io/tributary/cluster"
)

// SecurityProtocol is how a listener protects its connections.
type SecurityProtocol = netserver.SecurityProtocol

// The security protocols of Kafka.
const (
	Plaintext     = netserver.Plaintext
	SSL           = netserver.SSL
	SASLPlaintext = netserver.SASLPlaintext
	SASLSSL       = netserver.SASLSSL
)

// Listener is one address the broker serves.
type Listener = netserver.Listener

// ParseListeners reads a comma-separated list of PROTOCOL://host:port, as
// Kafka's listeners setting.
func ParseListeners(s string) ([]Listener, error) { return netserver.ParseListeners(s) }

// Advertise sets the advertised addresses of ls from a list in the same
// PROTOCOL://host:port form (advertised.listeners); each must name one of
// the listeners.
func Advertise(ls []Listener, s string) error { return netserver.Advertise(ls, s) }

// ListenerEndpoint is where clients reach listener l bound to ln: its
// advertised address, else the bound one.
func ListenerEndpoint(l Listener, ln net.Listener) cluster.Endpoint {
	return listenerEndpoint(l, ln.Addr())
}

func listenerEndpoint(l Listener, bound net.Addr) cluster.Endpoint {
	addr := l.Advertised
	if addr == "" {
		addr = bound.String()
	}
	host, port, _ := splitHostPort(addr)
	return cluster.Endpoint{Listener: string(l.Protocol), Host: host, Port: port}
}

// Endpoints are the advertised endpoints of the listeners being served, in
// the order given to ServeListeners; a cluster member registers them.
func (b *Broker) Endpoints() []cluster.Endpoint {
	if b.server == nil {
		return nil // New reads the cluster's view of itself before it makes the server
	}
	ls := b.server.Listening()
	out := make([]cluster.Endpoint, 0, len(ls))
	for _, l := range ls {
		out = append(out, listenerEndpoint(l.Listener, l.Addr))
	}
	return out
}

// SelfWithEndpoints fills a cluster member's address from endpoints: all
// of them, plus Host and Port from the first PLAINTEXT one (else the first)
// for readers that predate listeners.
func SelfWithEndpoints(self cluster.Broker, eps []cluster.Endpoint) cluster.Broker {
	self.Endpoints = eps
	if len(eps) == 0 {
		return self
	}
	first := eps[0]
	for _, e := range eps {
		if e.Listener == string(Plaintext) {
			first = e
			break
		}
	}
	self.Host, self.Port = first.Host, first.Port
	return self
}

func splitHostPort(addr string) (string, int32, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, false
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		return "", 0, false
	}
	return host, int32(p), true
}

// interBrokerListener is the listener followers fetch from and
// transaction peers are reached on.
func (b *Broker) interBrokerListener() SecurityProtocol {
	if b.cfg.InterBrokerListener != "" {
		return b.cfg.InterBrokerListener
	}
	return SecurityProtocol(b.cfg.InterBroker.Protocol())
}
