package main

import (
	"flag"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/internal/clientsec"
)

// clientFlags are how a client command reaches secured brokers (--tls-*,
// --sasl-*) and a secured schema registry (--registry-user-info-file,
// --registry-tls-ca).
type clientFlags struct {
	kafka    clientsec.Kafka
	registry clientsec.Registry
}

// register adds the broker flags, and the registry's when withRegistry.
func (f *clientFlags) register(fs *flag.FlagSet, withRegistry bool) {
	f.kafka.Register(fs, "")
	if withRegistry {
		f.registry.Register(fs, "")
	}
}

// kgoOpts is base with the security options appended.
func (f *clientFlags) kgoOpts(base ...kgo.Opt) ([]kgo.Opt, error) {
	sec, err := f.kafka.Opts()
	if err != nil {
		return nil, err
	}
	return append(base, sec...), nil
}

// newKafkaClient is kgo.NewClient with the security options.
func (f *clientFlags) newKafkaClient(base ...kgo.Opt) (*kgo.Client, error) {
	opts, err := f.kgoOpts(base...)
	if err != nil {
		return nil, err
	}
	return kgo.NewClient(opts...)
}

// registryClient is a registry client for urls (comma-separated) given
// with flag, with sec's credentials.
func registryClient(flag, urls string, sec clientsec.Registry, more ...sr.ClientOpt) (*sr.Client, error) {
	opts, err := sec.Opts()
	if err != nil {
		return nil, err
	}
	cl, err := sr.NewClient(append(append([]sr.ClientOpt{sr.URLs(splitList(urls)...)}, more...), opts...)...)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", flag, urls, err)
	}
	return cl, nil
}
