package broker_test

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// gatherCollector collects c as a scrape would, by family name, on a
// pedantic registry (every series in a described family), and checks that
// every family has a HELP line.
func gatherCollector(t *testing.T, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP", f.GetName())
		}
	}
	return byName
}

// The throttle counter adds up the throttle times the broker gave: one
// produce and one fetch, each twice their client's quota, are throttled
// about a second each, and the counter says what the clients were told.
func TestQuotaThrottleMetric(t *testing.T) {
	b := testenv.StartBroker(t)
	const quota = 8 << 10
	admin := newClient(t, b.Addr)
	for entity, key := range map[string]string{"client-id=metered-writer": "producer_byte_rate", "client-id=metered-reader": "consumer_byte_rate"} {
		if code, msg := alterQuota(t, admin, entity, key, quota); code != 0 {
			t.Fatalf("setting the quota: %v %s", kerr.ErrorForCode(code), msg)
		}
	}
	createTopic(t, b.Addr, "metered", 1, nil)
	var told atomic.Int64 // milliseconds
	hook := kgo.WithHooks(throttleMillisHook{&told})
	p := newClient(t, b.Addr, kgo.ClientID("metered-writer"), kgo.DefaultProduceTopic("metered"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), hook)
	if err := p.ProduceSync(context.Background(), &kgo.Record{Value: make([]byte, 2*quota)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	f := gatherCollector(t, b.Metrics())
	produce := sum(f, "tributary_quota_throttle_seconds_total", map[string]string{"kind": "produce"})
	if want := float64(told.Load()) / 1000; produce == 0 || math.Abs(produce-want) > 0.01 {
		t.Fatalf("produce throttle counted %.3fs, the producer was told %.3fs", produce, want)
	}
	if fetch := sum(f, "tributary_quota_throttle_seconds_total", map[string]string{"kind": "fetch"}); fetch != 0 {
		t.Fatalf("fetch throttle %v before any fetch", fetch)
	}

	told.Store(0)
	c := newClient(t, b.Addr, kgo.ClientID("metered-reader"), kgo.ConsumeTopics("metered"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), hook)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for read := 0; read == 0; {
		fs := c.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		read += fs.NumRecords()
	}
	testenv.Eventually(t, 10*time.Second, "the fetch throttle is counted as the consumer was told", func() bool {
		fetch := sum(gatherCollector(t, b.Metrics()), "tributary_quota_throttle_seconds_total", map[string]string{"kind": "fetch"})
		return fetch > 0 && math.Abs(fetch-float64(told.Load())/1000) <= 0.01
	})
}

// throttleMillisHook adds up the throttle times responses carried.
type throttleMillisHook struct{ ms *atomic.Int64 }

func (h throttleMillisHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.ms.Add(d.Milliseconds())
}

// Refused logins are counted by mechanism and reason: each wrong password
// as bad_credentials, and past the failed-login limit each further try,
// right password or not, as rate_limited.
func TestRefusedLoginMetric(t *testing.T) {
	var dataDir string
	b, addrs := startListeners(t, func(c *broker.Config) { dataDir = c.DataDir }, broker.SASLPlaintext)
	setUser(t, dataDir, "alice", "SCRAM-SHA-512", "alice-secret")
	login := func(password string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs[broker.SASLPlaintext]), kgo.RequestRetries(0),
			kgo.SASL(plain.Auth{User: "alice", Pass: password}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	if err := login("alice-secret"); err != nil {
		t.Fatal(err)
	}
	refused := func(reason string) float64 {
		return sum(gatherCollector(t, b.Metrics()), "tributary_broker_logins_refused_total", map[string]string{"mechanism": "PLAIN", "reason": reason})
	}
	if refused("bad_credentials")+refused("rate_limited") != 0 {
		t.Fatal("a successful login counted as refused")
	}
	const guesses = 3
	for range guesses {
		if err := login("guess"); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("wrong password: %v", err)
		}
	}
	if got := refused("bad_credentials"); got != guesses {
		t.Fatalf("bad_credentials %v after %d wrong passwords", got, guesses)
	}
	// The default limit is 10 failures a minute per address.
	for range 10 - guesses {
		login("guess")
	}
	if err := login("alice-secret"); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("login past the limit: %v", err)
	}
	if got, limited := refused("bad_credentials"), refused("rate_limited"); got != 10 || limited != 1 {
		t.Fatalf("bad_credentials %v, rate_limited %v; want 10 and 1", got, limited)
	}
}

// Each request's queue time is observed once, per API; with
// DisableMetrics no event is counted but the state read at scrape time is
// still there.
func TestRequestQueueTimeAndDisableMetrics(t *testing.T) {
	for _, off := range []bool{false, true} {
		b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.DisableMetrics = off }))
		cl := newClient(t, b.Addr)
		testenv.CreateTopic(t, cl, "queued", 1)
		testenv.ProduceRange(t, cl, "queued", 0, 20)
		f := gatherCollector(t, b.Metrics())
		produce := map[string]string{"api": "Produce"}
		requests, queued := sum(f, "tributary_broker_requests_total", produce), sum(f, "tributary_broker_request_queue_seconds", produce)
		if hw := sum(f, "tributary_partition_high_watermark", map[string]string{"topic": "queued"}); hw != 20 {
			t.Errorf("DisableMetrics=%v: high watermark %v, want 20", off, hw)
		}
		if off {
			if requests != 0 || queued != 0 || sum(f, "tributary_broker_topic_messages_in_total", nil) != 0 {
				t.Errorf("DisableMetrics: %v produce requests, %v queue times counted", requests, queued)
			}
			continue
		}
		// A request is counted once its response is written, which the
		// client may see first.
		testenv.Eventually(t, 10*time.Second, "a queue time observed for each produce request", func() bool {
			f := gatherCollector(t, b.Metrics())
			requests, queued = sum(f, "tributary_broker_requests_total", produce), sum(f, "tributary_broker_request_queue_seconds", produce)
			return requests > 0 && queued == requests
		})
	}
}
