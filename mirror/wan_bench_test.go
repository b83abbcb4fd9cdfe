package mirror_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
)

// BenchmarkMirrorWAN measures the copy rate with a delay between the mirror
// and the source (each direction delayed by the one-way delay, no bandwidth
// cap, as a WAN link), for one and eight partitions, and reports it as a
// ratio to the same copy without delay:
//
//	go test -run '^$' -bench MirrorWAN -benchtime 1x ./mirror/
//
// There is no netem on these machines: the delay is a dialer that holds
// every chunk written in either direction for the delay before passing it
// on, one goroutine per direction.
func BenchmarkMirrorWAN(b *testing.B) {
	const records = 400000 // 100-byte values: about 44 MB
	src := testenv.StartBroker(b)
	for _, partitions := range []int32{1, 8} {
		topic := fmt.Sprintf("wan-%d", partitions)
		createTopic(b, []string{src.Addr}, topic, partitions)
		produce(b, []string{src.Addr}, "dc1", topic, partitions, 0, records/int(partitions))
		// 1 MiB a partition is kgo's default, which the mirror had: one
		// fetch in flight per source broker, so a partition gets at most
		// that per round trip.
		for _, fetch := range []int32{1 << 20, 32 << 20} {
			var base float64
			for _, delay := range []time.Duration{0, 25 * time.Millisecond, 50 * time.Millisecond} {
				b.Run(fmt.Sprintf("partitions=%d/fetch=%dMiB/one-way=%v", partitions, fetch>>20, delay), func(b *testing.B) {
					for range b.N {
						dst := testenv.StartBroker(b)
						rate := copyRate(b, src, dst, topic, records, delay, fetch)
						if delay == 0 {
							base = rate
						}
						b.ReportMetric(rate, "records/s")
						if base > 0 {
							b.ReportMetric(rate/base, "ratio-to-no-delay")
						}
					}
				})
			}
		}
	}
}

// copyRate runs a mirror from src to a new target through a delayed link
// and returns the records per second from its first copy to its last.
func copyRate(b *testing.B, src, dst *testenv.Broker, topic string, total int64, delay time.Duration, fetch int32) float64 {
	tcl := newClient(b, []string{dst.Addr}, kgo.MetadataMinAge(10*time.Millisecond))
	_, stop := runMirror(b, mirror.Config{Sources: []mirror.Source{{Name: "dc1", Bootstrap: []string{src.Addr}}}, Target: []string{dst.Addr},
		Topics: "^" + topic + "$", LogInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		FetchMaxPartitionBytes: fetch, FetchOptions: []kgo.Opt{kgo.Dialer(delayedDialer(delay))}})
	// From the first copy on: joining the group (a new group waits 3 s
	// for more members) is not the link's doing.
	var start time.Time
	var first int64
	for {
		n, _ := endOffsets(b, tcl, topic)
		if n > 0 && start.IsZero() {
			start, first = time.Now(), n
		}
		if n >= total {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	rate := float64(total-first) / time.Since(start).Seconds()
	if err := stop(); err != nil {
		b.Fatal(err)
	}
	return rate
}

// delayedDialer dials through a link that delays each direction by d.
func delayedDialer(d time.Duration) func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		var dialer net.Dialer
		conn, err := dialer.DialContext(ctx, network, host)
		if err != nil || d == 0 {
			return conn, err
		}
		near, far := net.Pipe()
		var once sync.Once
		closeBoth := func() { once.Do(func() { conn.Close(); far.Close() }) }
		go delayCopy(conn, far, d, closeBoth)
		go delayCopy(far, conn, d, closeBoth)
		return near, nil
	}
}

// delayCopy passes what it reads from r to w, each chunk d after it was
// read, in order.
func delayCopy(w io.Writer, r io.Reader, d time.Duration, done func()) {
	type chunk struct {
		at   time.Time
		data []byte
	}
	ch := make(chan chunk, 4096)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 64<<10)
			n, err := r.Read(buf)
			if n > 0 {
				ch <- chunk{time.Now().Add(d), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	defer done()
	for c := range ch {
		time.Sleep(time.Until(c.at))
		if _, err := w.Write(c.data); err != nil {
			return
		}
	}
}
