package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

func init() {
	register(&system{
		name: "nats",
		notes: "NATS JetStream (Debian nats-server 2.9), file storage, limits retention, server-default fsync " +
			"(2.9 has no sync_interval). Client nats.go: acks=1 batch 1 = synchronous publish, batch N = N async " +
			"publishes then wait for their PubAcks; acks=0 = core publish into the stream's subject, which the " +
			"client buffers itself (batch makes no difference)",
		start:   startPeer("nats", 1),
		connect: connectNATS,
	})
}

type natsDriver struct {
	nc  *nats.Conn
	js  nats.JetStreamContext
	rng *rand.Rand
}

func connectNATS(ctx context.Context, addr string) (driver, error) {
	nc, err := nats.Connect("nats://"+addr, nats.ReconnectBufSize(-1))
	if err != nil {
		return nil, err
	}
	js, err := nc.JetStream(nats.PublishAsyncMaxPending(4096))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsDriver{nc: nc, js: js, rng: rand.New(rand.NewPCG(1, 2))}, nil
}

func (d *natsDriver) Close() { d.nc.Close() }

// stream makes a file-backed stream named and captured by subject.
func (d *natsDriver) stream(subject string) error {
	_, err := d.js.AddStream(&nats.StreamConfig{Name: subject, Subjects: []string{subject}, Storage: nats.FileStorage})
	if err != nil && !errors.Is(err, nats.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("add stream %s: %w", subject, err)
	}
	return nil
}

func (d *natsDriver) Produce(ctx context.Context, subject string, n, batch int, acked bool, deadline time.Time) (int, int, error) {
	if err := d.stream(subject); err != nil {
		return 0, 0, err
	}
	value := payload(d.rng)
	futures := make([]nats.PubAckFuture, 0, batch)
	sent := 0
	for sent < n && time.Now().Before(deadline) {
		k := min(batch, n-sent)
		switch {
		case !acked:
			for range k {
				if err := d.nc.Publish(subject, value); err != nil {
					return sent, 0, err
				}
			}
		case k == 1:
			if _, err := d.js.Publish(subject, value); err != nil {
				return sent, 0, err
			}
		default:
			futures = futures[:0]
			for range k {
				f, err := d.js.PublishAsync(subject, value)
				if err != nil {
					return sent, 0, err
				}
				futures = append(futures, f)
			}
			for _, f := range futures {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					return sent, 0, err
				case <-ctx.Done():
					return sent, 0, ctx.Err()
				}
			}
		}
		sent += k
	}
	if err := d.nc.Flush(); err != nil {
		return sent, 0, err
	}
	stored, err := pollStored(ctx, sent, func() (int, error) {
		si, err := d.js.StreamInfo(subject)
		if err != nil {
			return 0, err
		}
		return int(si.State.Msgs), nil
	})
	return sent, stored, err
}

func (d *natsDriver) Consume(ctx context.Context, subject string, n int, deadline time.Time) (int, error) {
	// AckNone: like a Kafka consumer, the reader keeps its own position and
	// the server keeps no per-message delivery state.
	sub, err := d.js.PullSubscribe(subject, "bench", nats.AckNone(), nats.DeliverAll())
	if err != nil {
		return 0, err
	}
	defer sub.Unsubscribe()
	got := 0
	for got < n && time.Now().Before(deadline) {
		msgs, err := sub.Fetch(min(1000, n-got), nats.PullMaxBytes(200<<10), nats.MaxWait(2*time.Second))
		if err != nil && !errors.Is(err, nats.ErrTimeout) {
			return got, err
		}
		got += len(msgs)
	}
	return got, nil
}

func (d *natsDriver) Latency(ctx context.Context, subject string, every time.Duration, stop time.Time) ([]time.Duration, error) {
	if err := d.stream(subject); err != nil {
		return nil, err
	}
	var (
		mu  sync.Mutex
		lat []time.Duration
	)
	sub, err := d.js.Subscribe(subject, func(m *nats.Msg) {
		if t, ok := sentAt(m.Data); ok {
			mu.Lock()
			lat = append(lat, time.Since(t))
			mu.Unlock()
		}
	}, nats.AckNone(), nats.DeliverAll())
	if err != nil {
		return nil, err
	}
	consumed := make(chan struct{})
	cancel := func() { sub.Unsubscribe(); close(consumed) }
	tick := time.NewTicker(every)
	defer tick.Stop()
	sent := 0
	for time.Now().Before(stop) {
		select {
		case <-ctx.Done():
			cancel()
			return nil, ctx.Err()
		case <-tick.C:
		}
		if _, err := d.js.Publish(subject, stamp(payload(d.rng))); err != nil {
			cancel()
			return nil, err
		}
		sent++
	}
	return waitLatencies(&mu, &lat, sent, cancel, consumed), nil
}
