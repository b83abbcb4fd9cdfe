package netserver

// Listeners, as Kafka names them: a broker serves several at once, each
// with its own security protocol, and tells every client the addresses of
// the listener that client came through, so a client that reached the
// broker over SASL_SSL is never sent to a PLAINTEXT port.
//
// A listener's name is its security protocol; Tributary has no
// listener.security.protocol.map, so a broker has at most one listener of
// each protocol.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
)

// SecurityProtocol is how a listener protects its connections.
type SecurityProtocol string

// The security protocols of Kafka.
const (
	Plaintext     SecurityProtocol = "PLAINTEXT"
	SSL           SecurityProtocol = "SSL"
	SASLPlaintext SecurityProtocol = "SASL_PLAINTEXT"
	SASLSSL       SecurityProtocol = "SASL_SSL"
)

// TLS reports whether connections of the protocol are TLS connections.
func (p SecurityProtocol) TLS() bool { return p == SSL || p == SASLSSL }

// SASL reports whether clients must authenticate with SASL before any
// request other than ApiVersions, SaslHandshake and SaslAuthenticate.
func (p SecurityProtocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }

func (p SecurityProtocol) valid() bool {
	switch p {
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
		return true
	}
	return false
}

// Listener is one address the broker serves.
type Listener struct {
	Protocol SecurityProtocol
	// Addr is the address to bind, host:port (port 0: any free port).
	Addr string
	// Advertised is the host:port clients are told to use; empty: the
	// bound address.
	Advertised string
}

func (l Listener) String() string { return string(l.Protocol) + "://" + l.Addr }

// ParseListeners reads a comma-separated list of PROTOCOL://host:port, as
// Kafka's listeners setting.
func ParseListeners(s string) ([]Listener, error) {
	var out []Listener
	seen := map[SecurityProtocol]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		proto, addr, ok := strings.Cut(item, "://")
		if !ok {
			return nil, fmt.Errorf("listener %q: want PROTOCOL://host:port, e.g. SASL_SSL://127.0.0.1:9093", item)
		}
		p := SecurityProtocol(strings.ToUpper(proto))
		if !p.valid() {
			return nil, fmt.Errorf("listener %q: %s is not a security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)", item, proto)
		}
		if seen[p] {
			return nil, fmt.Errorf("listener %q: a second %s listener (each protocol names one listener)", item, p)
		}
		seen[p] = true
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("listener %q: %w", item, err)
		}
		out = append(out, Listener{Protocol: p, Addr: addr})
	}
	if len(out) == 0 {
		return nil, errors.New("no listeners given")
	}
	return out, nil
}

// Advertise sets the advertised addresses of ls from a list in the same
// PROTOCOL://host:port form (advertised.listeners); each must name one of
// the listeners.
func Advertise(ls []Listener, s string) error {
	adv, err := ParseListeners(s)
	if err != nil {
		return fmt.Errorf("advertised listeners: %w", err)
	}
	for _, a := range adv {
		found := false
		for i := range ls {
			if ls[i].Protocol == a.Protocol {
				ls[i].Advertised, found = a.Addr, true
			}
		}
		if !found {
			return fmt.Errorf("advertised listener %s has no listener of that protocol", a)
		}
	}
	return nil
}

// boundListener is a listener being served.
type boundListener struct {
	Listener
	ln  net.Listener
	tls *tls.Config // nil unless Protocol.TLS()
}
