package broker_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
)

// TestMetadataAnswersWithTheClientsListener: a client of the SSL listener
// is sent to SSL ports only, and one of the PLAINTEXT listener to
// PLAINTEXT ports, so both produce and consume through their own.
func TestMetadataAnswersWithTheClientsListener(t *testing.T) {
	pki := newTestPKI(t)
	_, addrs := startListeners(t, func(c *broker.Config) {
		c.TLS = broker.TLSFiles{CertFile: pki.certFile, KeyFile: pki.keyFile}
	}, broker.Plaintext, broker.SSL)

	for proto, opts := range map[broker.SecurityProtocol][]kgo.Opt{
		broker.Plaintext: nil,
		broker.SSL:       {kgo.DialTLSConfig(pki.clientTLS(t, false))},
	} {
		adm := kadm.NewClient(newClient(t, addrs[proto], opts...))
		md, err := adm.BrokerMetadata(context.Background())
		if err != nil {
			t.Fatalf("%s metadata: %v", proto, err)
		}
		if len(md.Brokers) != 1 || fmt.Sprintf("%s:%d", md.Brokers[0].Host, md.Brokers[0].Port) != addrs[proto] {
			t.Fatalf("%s client was given brokers %+v, want its listener %s", proto, md.Brokers, addrs[proto])
		}
		roundTrip(t, addrs[proto], "over-"+string(proto), 20, opts...)
	}
}

// TestMutualTLS: with a client CA, a client presenting a certificate it
// signed is served, and one without a certificate is refused in the
// handshake.
func TestMutualTLS(t *testing.T) {
	pki := newTestPKI(t)
	_, addrs := startListeners(t, func(c *broker.Config) {
		c.TLS = broker.TLSFiles{CertFile: pki.certFile, KeyFile: pki.keyFile, ClientCAFile: pki.caFile}
	}, broker.SSL)
	roundTrip(t, addrs[broker.SSL], "mtls", 10, kgo.DialTLSConfig(pki.clientTLS(t, true)))

	conn, err := tls.Dial("tcp", addrs[broker.SSL], pki.clientTLS(t, false))
	if err == nil {
		// TLS 1.3 reports the refused certificate on the first read.
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	if err == nil {
		t.Fatal("a client without a certificate got through a listener that requires one")
	}
}

// TestPlaintextClientOnTLSListenerIsRefused: a client speaking Kafka in
// clear to a TLS port gets an error, not an answer, the broker logs the
// client's address and why, and serves others on.
func TestPlaintextClientOnTLSListenerIsRefused(t *testing.T) {
	pki := newTestPKI(t)
	var logs logBuffer
	_, addrs := startListeners(t, func(c *broker.Config) {
		c.TLS = broker.TLSFiles{CertFile: pki.certFile, KeyFile: pki.keyFile}
		c.Logger = logs.logger()
	}, broker.SSL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var clients localAddrs
	cl := newClient(t, addrs[broker.SSL], kgo.RequestRetries(0), kgo.RetryTimeout(time.Second), clients.dialer(nil))
	if err := cl.Ping(ctx); err == nil {
		t.Fatal("a plaintext client was answered on a TLS listener")
	}
	wantLogged(t, &logs, &clients, "TLS handshake failed", "does not look like a TLS handshake")
	roundTrip(t, addrs[broker.SSL], "after-plaintext", 5, kgo.DialTLSConfig(pki.clientTLS(t, false)))
}

// TestMutualTLSPrincipal: a client certificate's CN is the principal ACLs
// see: User:alice may write the topic her ACL names, a client with the
// same CA but no ACL may not.
func TestMutualTLSPrincipal(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	_, addrs := startListeners(t, func(c *broker.Config) {
		c.DataDir = dir
		c.TLS = broker.TLSFiles{CertFile: pki.certFile, KeyFile: pki.keyFile, ClientCAFile: pki.caFile}
		c.Authorizer = true
		c.SuperUsers = []string{"User:root"}
	}, broker.SSL)
	addr := addrs[broker.SSL]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	rootCert, rootKey := pki.issue(t, "root", "", 10)
	rootTLS := pki.clientTLS(t, false)
	pair, err := tls.LoadX509KeyPair(rootCert, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	rootTLS.Certificates = []tls.Certificate{pair}
	root := kadm.NewClient(newClient(t, addr, kgo.DialTLSConfig(rootTLS)))
	if _, err := root.CreateTopics(ctx, 1, 1, nil, "certified"); err != nil {
		t.Fatal(err)
	}
	res, err := root.CreateACLs(ctx, kadm.NewACLs().Topics("certified").Allow("User:alice").AllowHosts("*").Operations(kadm.OpWrite))
	if err != nil || res[0].Err != nil {
		t.Fatalf("creating alice's ACL: %v %v", err, res)
	}
	alice := newClient(t, addr, kgo.DialTLSConfig(pki.clientTLS(t, true)), kgo.RequestRetries(0))
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "certified", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("User:alice (from her certificate) writing her topic: %v", err)
	}
	bobCert, bobKey := pki.issue(t, "bob", "", 11)
	bobTLS := pki.clientTLS(t, false)
	if pair, err = tls.LoadX509KeyPair(bobCert, bobKey); err != nil {
		t.Fatal(err)
	}
	bobTLS.Certificates = []tls.Certificate{pair}
	bob := newClient(t, addr, kgo.DialTLSConfig(bobTLS), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "certified", Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("User:bob writing alice's topic: got %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}
