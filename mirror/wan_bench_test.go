package mirror_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
)

// BenchmarkMirrorWAN measures the copy rate with a delay between the mirror
// and the source (each direction delayed by the one-way delay, no bandwidth
// cap, as a WAN link) of 0, 25 and 50 ms, for a topic of one partition and
// one of eight, and reports the six rates and each delay's ratio to no
// delay in one line (make bench-mirror), with transactions (the default).
// Each round also measures the no-delay copy without transactions
// (Config.NoTransactions): p1-0ms-txn/notxn and p8-0ms-txn/notxn are what
// transactions cost, the median of the rounds' ratios.
//
//	go test -run '^$' -bench MirrorWAN -benchtime 1x ./mirror/
//
// The machine's load changes from second to second (other processes share
// the cores), so the cells are measured in rounds (-mirror.wan-rounds), the
// delays in a rotated order each round, and a ratio is the median over the
// rounds of the rate at that delay divided by the no-delay rate measured
// next to it in the same round. Rates are medians too.
//
// There is no netem on these machines: the delay is a dialer that holds
// every chunk written in either direction for the delay before passing it
// on, one goroutine per direction.
func BenchmarkMirrorWAN(b *testing.B) {
	records := *wanRecords
	delays := []time.Duration{0, 25 * time.Millisecond, 50 * time.Millisecond}
	src := testenv.StartBroker(b)
	for _, partitions := range []int32{1, 8} {
		topic := fmt.Sprintf("wan-%d", partitions)
		createTopic(b, []string{src.Addr}, topic, partitions)
		produce(b, []string{src.Addr}, "dc1", topic, partitions, 0, int(records)/int(partitions))
	}
	type cell struct {
		partitions int32
		delay      time.Duration
	}
	for range b.N {
		rates := map[cell][]float64{}
		ratios := map[cell][]float64{}
		for round := range *wanRounds {
			for _, partitions := range []int32{1, 8} {
				topic := fmt.Sprintf("wan-%d", partitions)
				got := map[time.Duration]float64{}
				var plain float64
				j := 0 // the delays in a rotated order, the plain copy among them
				for i := range len(delays) + 1 {
					if i == round%(len(delays)+1) {
						// No delay and no transactions (--transactions=false):
						// what transactions cost.
						plain = copyRate(b, src, topic, records, 0, int32(*wanFetch), false)
						rates[cell{partitions, -1}] = append(rates[cell{partitions, -1}], plain)
						continue
					}
					delay := delays[(j+round)%len(delays)]
					j++
					got[delay] = copyRate(b, src, topic, records, delay, int32(*wanFetch), true)
					rates[cell{partitions, delay}] = append(rates[cell{partitions, delay}], got[delay])
				}
				for _, delay := range delays {
					ratios[cell{partitions, delay}] = append(ratios[cell{partitions, delay}], got[delay]/got[0])
				}
				ratios[cell{partitions, -1}] = append(ratios[cell{partitions, -1}], got[0]/plain)
				b.Logf("round %d, %d partition(s): %.0f, %.0f, %.0f records/s at 0, 25, 50 ms; %.0f at 0 ms without transactions",
					round+1, partitions, got[delays[0]], got[delays[1]], got[delays[2]], plain)
			}
		}
		for _, partitions := range []int32{1, 8} {
			for _, delay := range delays {
				c := cell{partitions, delay}
				name := fmt.Sprintf("p%d-%dms", partitions, delay.Milliseconds())
				b.ReportMetric(median(rates[c]), name+"-records/s")
				if delay > 0 {
					b.ReportMetric(median(ratios[c]), name+"-ratio")
				}
			}
			c := cell{partitions, -1}
			b.ReportMetric(median(rates[c]), fmt.Sprintf("p%d-0ms-notxn-records/s", partitions))
			b.ReportMetric(median(ratios[c]), fmt.Sprintf("p%d-0ms-txn/notxn", partitions))
		}
	}
}

// wanRounds, wanRecords and wanFetch tune BenchmarkMirrorWAN: more rounds
// cancel more noise; a copy must last many round trips for the rate to be
// the link's steady state (2M records of 100 bytes take a second or two
// here without delay, against a 100 ms round trip); -mirror.wan-fetch=1048576
// measures the mirror as it was with kgo's default of 1 MiB per partition.
var (
	wanRecords = flag.Int64("mirror.wan-records", 2_000_000, "BenchmarkMirrorWAN: records per topic (100-byte values)")
	wanRounds  = flag.Int("mirror.wan-rounds", 3, "BenchmarkMirrorWAN: rounds of the six measurements")
	wanFetch   = flag.Int("mirror.wan-fetch", 32<<20, "BenchmarkMirrorWAN: the mirror's fetch size per partition, bytes")
	wanTxn     = flag.Duration("mirror.wan-txn-interval", 0, "BenchmarkMirrorWAN: the mirror's transaction interval (0: its default)")
)

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else if n > 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return 0
}

// copyRate runs a mirror from src to a new target through a delayed link
// and returns the records per second from its first copy to its last. The
// target is stopped and its data removed afterwards.
func copyRate(b *testing.B, src *testenv.Broker, topic string, total int64, delay time.Duration, fetch int32, txn bool) float64 {
	dir, err := os.MkdirTemp("", "mirror-wan-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	dst := testenv.StartBroker(b, testenv.WithDataDir(dir))
	defer dst.Stop()
	tcl, err := kgo.NewClient(kgo.SeedBrokers(dst.Addr), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer tcl.Close()
	_, stop := runMirror(b, mirror.Config{Sources: []mirror.Source{{Name: "dc1", Bootstrap: []string{src.Addr}}}, Target: []string{dst.Addr},
		Topics: "^" + topic + "$", LogInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		FetchMaxPartitionBytes: fetch, FetchOptions: []kgo.Opt{kgo.Dialer(delayedDialer(delay))}, NoTransactions: !txn, TransactionInterval: *wanTxn})
	// From the first copy on: joining the group (a new group waits 3 s
	// for more members) is not the link's doing.
	var start time.Time
	var first int64
	for {
		n := committedEnd(b, tcl, topic) // copies count once committed
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

// committedEnd sums the last stable offsets of topic: what read_committed
// readers see, transaction markers included (a few dozen in 2M records).
func committedEnd(b *testing.B, cl *kgo.Client, topic string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return 0
	}
	var sum int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			sum += o.Offset
		}
	})
	return sum
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
