package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/schema"
)

// Producer is a producer that counts what it sends: it serializes events
// into the envelope, produces them through a kgo client and, for every
// record the cluster acknowledges, counts it in its Publisher by the
// header's time and server as they were written (after the serializer
// filled them in). Records that fail to produce are not counted: the
// application saw the error.
type Producer struct {
	cl          *kgo.Client
	ser         *schema.Serializer // nil: values come serialized (NewEnvelopeProducer)
	headerField string
	pub         *Publisher
	headers     *HeaderReader
	now         func() time.Time
	log         *slog.Logger

	explained sync.Map // schema id → struct{}: why it has no time was logged
}

// NewProducer returns a Producer sending through cl, encoding with ser and
// counting in pub (whose schema registry must be the one ser uses). It
// reads the header in the field ser fills (SerializerConfig.HeaderField).
func NewProducer(cl *kgo.Client, ser *schema.Serializer, pub *Publisher) (*Producer, error) {
	p, err := NewEnvelopeProducer(cl, pub, ser.HeaderField())
	if err != nil {
		return nil, err
	}
	p.ser = ser
	return p, nil
}

// NewEnvelopeProducer returns a Producer of values serialized elsewhere
// (ProduceRecord only): envelopes of any schema the registry serves, a
// Protobuf or JSON Schema record written by Confluent's serializers too,
// whose header the producer reads in headerField (default
// schema.DefaultHeaderField).
func NewEnvelopeProducer(cl *kgo.Client, pub *Publisher, headerField string) (*Producer, error) {
	if headerField == "" {
		headerField = schema.DefaultHeaderField
	}
	hr, err := NewHeaderReader(pub.cfg.Registry, HeaderReaderConfig{HeaderField: headerField})
	if err != nil {
		return nil, err
	}
	p := &Producer{cl: cl, headerField: headerField, pub: pub, headers: hr, now: pub.cfg.Now, log: pub.cfg.Logger}
	pub.FindIn(cl)
	return p, nil
}

// Produce serializes event for topic and produces it asynchronously;
// promise, if not nil, is called as kgo calls it. An event that fails to
// encode is counted malformed and its error returned.
func (p *Producer) Produce(ctx context.Context, topic string, event any, promise func(*kgo.Record, error)) error {
	if p.ser == nil {
		return errors.New("audit: this producer takes serialized values (ProduceRecord) only")
	}
	v, err := p.ser.Serialize(ctx, topic, event)
	if err != nil {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			p.pub.Malformed(topic, p.now())
		}
		return err
	}
	return p.ProduceRecord(ctx, &kgo.Record{Topic: topic, Value: v}, promise)
}

// ProduceRecord produces a record whose value is already an envelope and
// counts it once acknowledged.
func (p *Producer) ProduceRecord(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error)) error {
	t, server, err := p.headers.Read(ctx, r.Value)
	switch {
	case err == nil, errors.Is(err, ErrNoTime), IsMalformed(err):
	default:
		return fmt.Errorf("audit: read the header of a record for %s: %w", r.Topic, err)
	}
	if errors.Is(err, ErrNoTime) {
		p.explain(r, err)
	}
	herr := err
	if p.pub.wal != nil {
		return p.produceLogged(ctx, r, t, server, herr, promise)
	}
	p.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
		if err == nil {
			switch {
			case herr == nil:
				p.pub.Count(r.Topic, t, server)
			case errors.Is(herr, ErrNoTime):
				p.pub.NoTime(r.Topic, r.Timestamp)
			default:
				p.pub.Malformed(r.Topic, r.Timestamp)
			}
		}
		if promise != nil {
			promise(r, err)
		}
	})
	return nil
}

// explain logs, once per schema id, why events have no header time: a
// producer that counts every event as no_time is a misconfiguration (a
// header under another field name, a time of the wrong type) that the
// operator should hear of, not find in a report weeks later.
func (p *Producer) explain(r *kgo.Record, err error) {
	id, _, derr := schema.DecodeEnvelope(r.Value)
	if derr != nil {
		return
	}
	if _, seen := p.explained.LoadOrStore(id, struct{}{}); seen {
		return
	}
	p.log.Warn("audit: events of this schema are counted as no_time: the producer cannot read their header time",
		"topic", r.Topic, "schema_id", id, "header_field", p.headerField, "reason", err)
}

// Flush waits until every record produced so far is acknowledged (and
// counted).
func (p *Producer) Flush(ctx context.Context) error { return p.cl.Flush(ctx) }
