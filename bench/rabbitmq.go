package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func init() {
	register(&system{
		name: "rabbitmq",
		notes: "RabbitMQ (Debian package), durable classic queue, persistent messages (delivery mode 2), " +
			"message store fsync on its own schedule. Client amqp091-go: batch N = N publishes, then (acks=1) " +
			"wait for their N publisher confirms; acks=0 = no confirms",
		start:   startPeer("rabbitmq", 1),
		connect: connectRabbitMQ,
	})
}

type rabbitDriver struct {
	conn *amqp.Connection
	rng  *rand.Rand
}

func connectRabbitMQ(ctx context.Context, addr string) (driver, error) {
	conn, err := amqp.Dial("amqp://guest:guest@" + addr + "/")
	if err != nil {
		return nil, err
	}
	return &rabbitDriver{conn: conn, rng: rand.New(rand.NewPCG(1, 2))}, nil
}

func (d *rabbitDriver) Close() { d.conn.Close() }

func (d *rabbitDriver) channel(queue string) (*amqp.Channel, error) {
	ch, err := d.conn.Channel()
	if err != nil {
		return nil, err
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		ch.Close()
		return nil, fmt.Errorf("declare queue %s: %w", queue, err)
	}
	return ch, nil
}

func (d *rabbitDriver) Produce(ctx context.Context, queue string, n, batch int, acked bool, deadline time.Time) (int, int, error) {
	ch, err := d.channel(queue)
	if err != nil {
		return 0, 0, err
	}
	defer ch.Close()
	var confirms chan amqp.Confirmation
	if acked {
		if err := ch.Confirm(false); err != nil {
			return 0, 0, err
		}
		confirms = ch.NotifyPublish(make(chan amqp.Confirmation, batch))
	}
	msg := amqp.Publishing{DeliveryMode: amqp.Persistent, Body: payload(d.rng)}
	sent := 0
	for sent < n && time.Now().Before(deadline) {
		k := min(batch, n-sent)
		for range k {
			if err := ch.PublishWithContext(ctx, "", queue, false, false, msg); err != nil {
				return sent, 0, err
			}
		}
		if confirms != nil {
			for range k {
				c, ok := <-confirms
				if !ok {
					return sent, 0, fmt.Errorf("channel closed while waiting for confirms")
				}
				if !c.Ack {
					return sent, 0, fmt.Errorf("message %d nacked by the broker", c.DeliveryTag)
				}
			}
		}
		sent += k
	}
	stored, err := pollStored(ctx, sent, func() (int, error) {
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		return q.Messages, err
	})
	return sent, stored, err
}

func (d *rabbitDriver) Consume(ctx context.Context, queue string, n int, deadline time.Time) (int, error) {
	ch, err := d.channel(queue)
	if err != nil {
		return 0, err
	}
	defer ch.Close()
	// Up to 1000 unacknowledged messages in flight (the paper's prefetch),
	// acknowledged 100 at a time, as for ActiveMQ.
	if err := ch.Qos(1000, 0, false); err != nil {
		return 0, err
	}
	deliveries, err := ch.Consume(queue, "bench", false, false, false, false, nil)
	if err != nil {
		return 0, err
	}
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	got := 0
	for got < n {
		select {
		case m, ok := <-deliveries:
			if !ok {
				return got, fmt.Errorf("delivery channel closed after %d messages", got)
			}
			got++
			if got%100 == 0 || got == n {
				if err := m.Ack(true); err != nil {
					return got, err
				}
			}
		case <-timeout.C:
			return got, nil
		case <-ctx.Done():
			return got, ctx.Err()
		}
	}
	return got, nil
}

func (d *rabbitDriver) Latency(ctx context.Context, queue string, every time.Duration, stop time.Time) ([]time.Duration, error) {
	cch, err := d.channel(queue)
	if err != nil {
		return nil, err
	}
	defer cch.Close()
	deliveries, err := cch.Consume(queue, "latency", true, false, false, false, nil)
	if err != nil {
		return nil, err
	}
	pch, err := d.channel(queue)
	if err != nil {
		return nil, err
	}
	defer pch.Close()
	if err := pch.Confirm(false); err != nil {
		return nil, err
	}
	confirms := pch.NotifyPublish(make(chan amqp.Confirmation, 1))

	var (
		mu  sync.Mutex
		lat []time.Duration
	)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for {
			select {
			case m, ok := <-deliveries:
				if !ok {
					return
				}
				if t, ok := sentAt(m.Body); ok {
					mu.Lock()
					lat = append(lat, time.Since(t))
					mu.Unlock()
				}
			case <-cctx.Done():
				return
			}
		}
	}()
	tick := time.NewTicker(every)
	defer tick.Stop()
	sent := 0
	for time.Now().Before(stop) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		msg := amqp.Publishing{DeliveryMode: amqp.Persistent, Body: stamp(payload(d.rng))}
		if err := pch.PublishWithContext(ctx, "", queue, false, false, msg); err != nil {
			return nil, err
		}
		if c := <-confirms; !c.Ack {
			return nil, fmt.Errorf("message %d nacked", c.DeliveryTag)
		}
		sent++
	}
	return waitLatencies(&mu, &lat, sent, cancel, consumed), nil
}
