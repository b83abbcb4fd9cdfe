package registry

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are a registry node's Prometheus metrics: its HTTP traffic,
// recorded as requests pass, and its state (schemas, subjects), read at
// scrape time. The endpoint label is the route pattern, never the path, so
// subjects and ids do not become series.
type metrics struct {
	node       *Node
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	rejections prometheus.Counter
}

var (
	descSchemas  = prometheus.NewDesc("tributary_registry_schemas", "Distinct schemas (ids) the registry holds.", nil, nil)
	descSubjects = prometheus.NewDesc("tributary_registry_subjects", "Subjects with at least one version that is not deleted.", nil, nil)
	descVersions = prometheus.NewDesc("tributary_registry_versions", "Schema versions over all subjects, soft-deleted ones included.", nil, nil)
	descReplayed = prometheus.NewDesc("tributary_registry_replayed_offset", "Offset of the next _schemas record this node will apply: how far it has read its state.", nil, nil)
	descReady    = prometheus.NewDesc("tributary_registry_ready", "1 once the node has replayed _schemas and serves; 0 while it answers 503.", nil, nil)
	descRefused  = prometheus.NewDesc("tributary_registry_writes_refused", "1 while the node refuses writes because _schemas was deleted or rewound (see its log, and --registry-accept-reset); 0 otherwise.", nil, nil)
	descLogins   = prometheus.NewDesc("tributary_registry_logins_refused_total", "Requests with HTTP basic credentials refused, by reason: bad_credentials (unknown user or wrong password), rate_limited (too many failures of that user, or from that address, within a minute).", []string{"reason"}, nil)
)

func newMetrics(n *Node) *metrics {
	return &metrics{
		node: n,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_registry_requests_total",
			Help: "REST requests answered, by route pattern (\"unmatched\" when none matched or the node was not serving) and HTTP status.",
		}, []string{"endpoint", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tributary_registry_request_duration_seconds",
			Help:    "Time to answer a REST request, by route pattern; writes include the round trip to _schemas.",
			Buckets: prometheus.ExponentialBuckets(.0005, 4, 9),
		}, []string{"endpoint"}),
		rejections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_registry_compatibility_rejections_total",
			Help: "Schemas refused because they are incompatible with the subject's earlier versions (HTTP 409 on register).",
		}),
	}
}

// wrap records each request h answers.
func (m *metrics) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		endpoint := r.Pattern // set by the routing mux on this request
		if endpoint == "" {
			endpoint = "unmatched"
		}
		m.requests.WithLabelValues(endpoint, strconv.Itoa(sw.code)).Inc()
		m.duration.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
		if sw.code == http.StatusConflict && endpoint == "POST /subjects/{subject}/versions" {
			m.rejections.Inc()
		}
	})
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.requests.Describe(ch)
	m.duration.Describe(ch)
	m.rejections.Describe(ch)
	for _, d := range []*prometheus.Desc{descSchemas, descSubjects, descVersions, descReplayed, descReady, descRefused, descLogins} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.duration.Collect(ch)
	m.rejections.Collect(ch)
	if a := m.node.cfg.Auth; a != nil {
		ch <- prometheus.MustNewConstMetric(descLogins, prometheus.CounterValue, float64(a.badCredentials.Load()), "bad_credentials")
		ch <- prometheus.MustNewConstMetric(descLogins, prometheus.CounterValue, float64(a.rateLimited.Load()), "rate_limited")
	}
	srv, _ := m.node.Server()
	if srv == nil {
		ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, 1)
	srv.mu.RLock()
	st := srv.st
	subjects, versions := 0, 0
	for _, s := range st.subjects {
		live := false
		for _, v := range s.versions {
			versions++
			live = live || !v.deleted
		}
		if live {
			subjects++
		}
	}
	schemas, next := st.schemaCount(), st.next
	srv.mu.RUnlock()
	ch <- prometheus.MustNewConstMetric(descSchemas, prometheus.GaugeValue, float64(schemas))
	ch <- prometheus.MustNewConstMetric(descSubjects, prometheus.GaugeValue, float64(subjects))
	ch <- prometheus.MustNewConstMetric(descVersions, prometheus.GaugeValue, float64(versions))
	ch <- prometheus.MustNewConstMetric(descReplayed, prometheus.GaugeValue, float64(next))
	refused := 0.0
	if srv.refused.Load() != nil {
		refused = 1
	}
	ch <- prometheus.MustNewConstMetric(descRefused, prometheus.GaugeValue, refused)
}

// ServeWithMetrics is Serve with the node's metrics registered on reg.
func (n *Node) ServeWithMetrics(ctx context.Context, ln net.Listener, reg prometheus.Registerer) error {
	m := newMetrics(n)
	if err := reg.Register(m); err != nil {
		ln.Close()
		return err
	}
	defer reg.Unregister(m)
	return serveHTTP(ctx, ln, m.wrap(n), n.cfg)
}

// Ready reports why the node does not serve yet (still replaying
// _schemas, or it cannot be read), or nil once it has caught up.
func (n *Node) Ready() error {
	_, err := n.Server()
	return err
}
