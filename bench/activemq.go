package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"time"
)

func init() {
	register(&system{
		name: "activemq",
		notes: "ActiveMQ 5.17 (Debian package), KahaDB, persistent messages, journal fsync every 200 ms " +
			"(journalDiskSyncStrategy=periodic, as Tributary's interval). Client: STOMP 1.2 (the one transport of the " +
			"package a Go client can speak): batch N = N SEND frames in one write, acks=1 = a receipt on the last",
		start:   startPeer("activemq", 1),
		connect: connectActiveMQ,
	})
}

type activeMQDriver struct {
	addr string
	rng  *rand.Rand
}

func connectActiveMQ(ctx context.Context, addr string) (driver, error) {
	s, err := dialSTOMP(addr)
	if err != nil {
		return nil, err
	}
	s.Close()
	return &activeMQDriver{addr: addr, rng: rand.New(rand.NewPCG(1, 2))}, nil
}

func (d *activeMQDriver) Close() {}

func queueDest(q string) string { return "destination:/queue/" + q }

func (d *activeMQDriver) Produce(ctx context.Context, queue string, n, batch int, acked bool, deadline time.Time) (int, int, error) {
	s, err := dialSTOMP(d.addr)
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	stopOnCancel := context.AfterFunc(ctx, func() { s.c.SetDeadline(time.Now()) })
	defer stopOnCancel()
	// A broker that stops answering (out of memory, say) fails the row
	// instead of hanging the run.
	s.c.SetDeadline(deadline.Add(time.Minute))
	value := payload(d.rng)
	sent := 0
	for sent < n && time.Now().Before(deadline) {
		k := min(batch, n-sent)
		for i := range k {
			if acked && i == k-1 {
				s.writeFrame("SEND", value, queueDest(queue), "persistent:true", fmt.Sprintf("receipt:%d", sent+i))
			} else {
				s.writeFrame("SEND", value, queueDest(queue), "persistent:true")
			}
		}
		if err := s.w.Flush(); err != nil {
			return sent, 0, err
		}
		if acked {
			if err := s.waitReceipt(fmt.Sprint(sent + k - 1)); err != nil {
				return sent, 0, err
			}
		}
		sent += k
	}
	if !acked {
		// The connection's frames are handled in order, so a receipt for a
		// no-op after the last SEND means the broker has taken every one.
		s.writeFrame("BEGIN", nil, "transaction:drain")
		s.writeFrame("ABORT", nil, "transaction:drain", "receipt:drain")
		if err := s.w.Flush(); err != nil {
			return sent, 0, err
		}
		if err := s.waitReceipt("drain"); err != nil {
			return sent, 0, err
		}
	}
	return sent, sent, nil
}

func (d *activeMQDriver) Consume(ctx context.Context, queue string, n int, deadline time.Time) (int, error) {
	s, err := dialSTOMP(d.addr)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	stopOnCancel := context.AfterFunc(ctx, func() { s.c.SetDeadline(time.Now()) })
	defer stopOnCancel()
	// Up to 1000 messages prefetched, the paper's setting. Client
	// acknowledgement is cumulative; one ACK per 100 messages, since the
	// queue pages in only 200 stored messages (maxPageSize) at a time and
	// holds back the rest until those are acknowledged.
	s.writeFrame("SUBSCRIBE", nil, "id:0", queueDest(queue), "ack:client", "activemq.prefetchSize:1000")
	if err := s.w.Flush(); err != nil {
		return 0, err
	}
	s.c.SetReadDeadline(deadline)
	got := 0
	for got < n {
		f, err := s.readFrame()
		if err != nil {
			if isTimeout(err) {
				return got, ctx.Err()
			}
			return got, err
		}
		if f.command != "MESSAGE" {
			continue
		}
		got++
		if got%100 == 0 || got == n {
			s.writeFrame("ACK", nil, "id:"+f.headers["ack"])
			if err := s.w.Flush(); err != nil {
				return got, err
			}
		}
	}
	s.c.SetReadDeadline(time.Time{})
	return got, nil
}

func (d *activeMQDriver) Latency(ctx context.Context, queue string, every time.Duration, stop time.Time) ([]time.Duration, error) {
	cons, err := dialSTOMP(d.addr)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	cons.writeFrame("SUBSCRIBE", nil, "id:0", queueDest(queue), "ack:auto")
	if err := cons.w.Flush(); err != nil {
		return nil, err
	}
	prod, err := dialSTOMP(d.addr)
	if err != nil {
		return nil, err
	}
	defer prod.Close()

	var (
		mu  sync.Mutex
		lat []time.Duration
	)
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for {
			f, err := cons.readFrame()
			if err != nil {
				return // the connection's deadline ends the reader
			}
			if t, ok := sentAt(f.body); ok && f.command == "MESSAGE" {
				mu.Lock()
				lat = append(lat, time.Since(t))
				mu.Unlock()
			}
		}
	}()
	cancel := func() { cons.c.SetReadDeadline(time.Now()) }
	tick := time.NewTicker(every)
	defer tick.Stop()
	sent := 0
	for time.Now().Before(stop) {
		select {
		case <-ctx.Done():
			cancel()
			<-consumed
			return nil, ctx.Err()
		case <-tick.C:
		}
		id := fmt.Sprint(sent)
		prod.writeFrame("SEND", stamp(payload(d.rng)), queueDest(queue), "persistent:true", "receipt:"+id)
		if err := prod.w.Flush(); err != nil {
			cancel()
			<-consumed
			return nil, err
		}
		if err := prod.waitReceipt(id); err != nil {
			cancel()
			<-consumed
			return nil, err
		}
		sent++
	}
	return waitLatencies(&mu, &lat, sent, cancel, consumed), nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
