package mirror

import (
	"github.com/prometheus/client_golang/prometheus"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/schema"
)

// schemaMap rewrites the schema ids of one source's envelopes into the
// target registry's ids. Ids are global in a registry but not across
// registries, so an id copied unchanged would name another schema, or none,
// in the analysis datacenter. Each (subject, source id) is resolved once:
// the schema is read from the source registry and registered under the
// same subject in the target (which returns the existing id if it is
// there already), and the pair is cached for the life of the process.
type schemaMap struct {
	src, dst   schema.Registry
	log        *slog.Logger
	translated prometheus.Counter // records whose id changed; nil: not counted

	mu  sync.Mutex
	ids map[schemaKey]int
}

type schemaKey struct {
	subject string
	id      int
}

func newSchemaMap(src, dst schema.Registry, log *slog.Logger) *schemaMap {
	return &schemaMap{src: src, dst: dst, log: log, ids: map[schemaKey]int{}}
}

func newRegistryClient(url string, opts ...sr.ClientOpt) (*sr.Client, error) {
	return sr.NewClient(append([]sr.ClientOpt{sr.URLs(url)}, opts...)...)
}

// errNotEnvelope marks a value that is not in the Confluent framing (plain
// bytes, JSON, ...): it is copied as it is.
var errNotEnvelope = errors.New("not an envelope")

// unresolvedError is a schema id that cannot be carried over: unknown to
// the source registry, or refused by the target registry (incompatible
// with what the subject holds there, for instance).
type unresolvedError struct {
	subject string
	id      int
	err     error
}

func (e *unresolvedError) Error() string {
	return fmt.Sprintf("schema id %d (subject %s) cannot be carried to the target registry: %v", e.id, e.subject, e.err)
}
func (e *unresolvedError) Unwrap() error { return e.err }

// rewrite returns value with its schema id replaced by the target's. A
// value that is not an envelope comes back unchanged with errNotEnvelope;
// an id that cannot be resolved gives an *unresolvedError; anything else
// (a registry that cannot be reached) is worth retrying. value is not
// modified: the returned slice is new when the id changes.
func (m *schemaMap) rewrite(ctx context.Context, topic string, value []byte) ([]byte, error) {
	id, body, err := schema.DecodeEnvelope(value)
	if err != nil {
		return value, errNotEnvelope
	}
	key := schemaKey{schema.TopicNameStrategy(topic), id}
	m.mu.Lock()
	to, ok := m.ids[key]
	m.mu.Unlock()
	if !ok {
		if to, err = m.resolve(ctx, key); err != nil {
			return value, err
		}
	}
	if to == id {
		return value, nil
	}
	if m.translated != nil {
		m.translated.Inc()
	}
	out := make([]byte, 0, len(value))
	out = schema.AppendEnvelope(out, to)
	return append(out, body...), nil
}

func (m *schemaMap) resolve(ctx context.Context, key schemaKey) (int, error) {
	s, err := m.src.SchemaByID(ctx, key.id)
	if err != nil {
		if clientError(err) {
			return 0, &unresolvedError{key.subject, key.id, fmt.Errorf("source registry: %w", err)}
		}
		return 0, fmt.Errorf("source registry: reading schema id %d: %w", key.id, err)
	}
	if s.References, err = m.carryRefs(ctx, key, s.References, 0); err != nil {
		return 0, err
	}
	to, err := m.dst.RegisterSchema(ctx, key.subject, s, -1, -1)
	if err != nil {
		if clientError(err) {
			return 0, &unresolvedError{key.subject, key.id, fmt.Errorf("target registry refused it: %w", err)}
		}
		return 0, fmt.Errorf("target registry: registering subject %s: %w", key.subject, err)
	}
	m.mu.Lock()
	m.ids[key] = to
	m.mu.Unlock()
	m.log.Info("schema id mapped to the target registry", "subject", key.subject, "source_id", key.id, "target_id", to)
	return to, nil
}

// clientError tells the registry's "no" (a 4xx: not found, incompatible,
// invalid) from a failure worth retrying (network, 5xx).
func clientError(err error) bool {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode >= 400 && re.StatusCode < 500 && re.StatusCode != http.StatusTooManyRequests
	}
	return false
}
