package bench

// Many partitions (issue 32): what a user sizing a broker for thousands of
// partitions measures. Each figure is taken with the same client (kgo) on
// Tributary and on Apache Kafka, in the same run:
//
//   - create: CreateTopics of topics × partitions, in requests of
//     createBatch topics, until Metadata shows a leader for every partition;
//   - all-in-one: one record to every partition with acks=all, the client
//     lingering 5 ms so that one Produce request names them all;
//   - one-by-one: one record to every partition with acks=all, one request
//     per partition, partitionClients requests in flight;
//   - idle CPU over idleWindow with no client connected, the resident set
//     and the open descriptors;
//   - clean stop (SIGTERM to exit), and the restart after it and after a
//     kill -9: from the start of the process to a Metadata naming a leader
//     for every partition, and to an all-in-one produce answered.
//
// Every step is bounded (stepTimeout); a step that fails or runs out is
// reported with its reason and the others still run.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	createBatch      = 100
	partitionClients = 16
	idleWindow       = 10 * time.Second
	stepTimeout      = 10 * time.Minute
)

// manyTopicName is the name of topic i of a many-partitions run.
func manyTopicName(i int) string { return fmt.Sprintf("many-%05d", i) }

// createMany creates topics topics of partitions partitions each (replicas
// replicas) and waits until every partition has a live leader.
func createMany(ctx context.Context, addr string, topics, partitions, replicas int) (time.Duration, error) {
	adm, cl, err := adminFor(addr)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	start := time.Now()
	for i := 0; i < topics; i += createBatch {
		var names []string
		for j := i; j < min(topics, i+createBatch); j++ {
			names = append(names, manyTopicName(j))
		}
		resp, err := adm.CreateTopics(ctx, int32(partitions), int16(replicas), nil, names...)
		if err != nil {
			return 0, fmt.Errorf("creating topics %d-%d: %w", i, i+len(names)-1, err)
		}
		for _, r := range resp {
			if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
				return 0, fmt.Errorf("creating %s: %w (%s)", r.Topic, r.Err, r.ErrMessage)
			}
		}
	}
	if err := waitLeaders(ctx, adm, topics, partitions, nil); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// waitLeaders polls Metadata until every partition of the run's topics has
// a leader that is not in dead.
func waitLeaders(ctx context.Context, adm *kadm.Client, topics, partitions int, dead map[int32]bool) error {
	want := topics * partitions
	var last string
	for {
		md, err := adm.Metadata(ctx)
		if err == nil {
			led := 0
			for _, t := range md.Topics {
				if !strings.HasPrefix(t.Topic, "many-") {
					continue
				}
				for _, p := range t.Partitions {
					if p.Err == nil && p.Leader >= 0 && !dead[p.Leader] {
						led++
					}
				}
			}
			if led >= want {
				return nil
			}
			last = fmt.Sprintf("%d of %d partitions have a live leader", led, want)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for leaders: %s: %w", last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// produceAllInOne sends one record to every partition, acks=all, lingering
// so that the records leave in one request, and waits for every answer.
func produceAllInOne(ctx context.Context, addr string, topics, partitions int) (time.Duration, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addr, ",")...),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(topics*partitions+1),
		kgo.ProduceRequestTimeout(30*time.Second), kgo.RecordDeliveryTimeout(stepTimeout))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	// Metadata first, so the records do not wait for it inside the timing.
	if err := cl.Ping(ctx); err != nil {
		return 0, err
	}
	recs := make([]*kgo.Record, 0, topics*partitions)
	for i := range topics {
		for p := range partitions {
			recs = append(recs, &kgo.Record{Topic: manyTopicName(i), Partition: int32(p), Value: []byte("many partitions")})
		}
	}
	start := time.Now()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// produceOneByOne sends one record to every partition, acks=all, each in
// its own request, partitionClients at once.
func produceOneByOne(ctx context.Context, addr string, topics, partitions int) (time.Duration, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addr, ",")...),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(30*time.Second), kgo.RecordDeliveryTimeout(stepTimeout))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return 0, err
	}
	work := make(chan [2]int)
	errs := make(chan error, partitionClients)
	var wg sync.WaitGroup
	start := time.Now()
	for range partitionClients {
		wg.Go(func() {
			for w := range work {
				r := &kgo.Record{Topic: manyTopicName(w[0]), Partition: int32(w[1]), Value: []byte("one by one")}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
					select {
					case errs <- fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, err):
					default:
					}
					return
				}
			}
		})
	}
feed:
	for i := range topics {
		for p := range partitions {
			select {
			case work <- [2]int{i, p}:
			case err := <-errs:
				close(work)
				wg.Wait()
				return 0, err
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return time.Since(start), nil
}

func adminFor(addr string) (*kadm.Client, *kgo.Client, error) {
	// kgo answers a Metadata request from what it fetched within
	// MetadataMinAge (5 s by default): every poll must ask the broker.
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addr, ",")...), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}

// cpuSeconds is the user and system CPU a process has used (/proc stat).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14 and stime 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("pid %d: unreadable stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("pid %d: short stat", pid)
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return (ut + st) / 100, nil // USER_HZ is 100 on Linux
}

// idleCPU is the share of one core pid uses over window.
func idleCPU(pid int, window time.Duration) (float64, error) {
	before, err := cpuSeconds(pid)
	if err != nil {
		return 0, err
	}
	time.Sleep(window)
	after, err := cpuSeconds(pid)
	if err != nil {
		return 0, err
	}
	return (after - before) / window.Seconds(), nil
}

// rssMiB is a process's resident set now (VmRSS).
func rssMiB(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("pid %d: no VmRSS", pid)
}

// openFiles counts a process's open descriptors.
func openFiles(pid int) (int, error) {
	ents, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	return len(ents), err
}
