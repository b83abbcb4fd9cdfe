package loader_test

import (
	"context"
	"encoding/binary"
	"maps"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/errgroup"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// BenchmarkLoad measures a whole run, broker to warehouse, of 200k page
// views (4 partitions, 3 hours) into a fresh local or HDFS warehouse (plain,
// or Kerberized with privacy on a nameservice of two NameNodes) or an
// S3-compatible store (S3Proxy on this machine's disk):
//
//	go test -run '^$' -bench BenchmarkLoad -benchtime 3x ./loader/
//
// records/s counts records loaded; MB/s is Kafka record value bytes read
// per second (the Avro files written are smaller: deflate).
func BenchmarkLoad(b *testing.B) {
	const n = 200_000
	env := loadertest.Start(b)
	env.CreateTopic(b, "bench", 4)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	env.Produce(b, "bench", loadertest.Schema(b, "pageview"), loadertest.PageViews(0, n, 4, from, 3*time.Hour))
	kinds := []struct {
		name string
		url  func(b *testing.B) string
		opts func(b *testing.B) warehouse.Options
	}{
		{"local", func(b *testing.B) string { return "file://" + b.TempDir() }, nil},
		{"hdfs", func(b *testing.B) string { return testenv.HDFSWarehouse(b) }, nil},
		{"s3", func(b *testing.B) string { return testenv.S3Warehouse(b) }, nil},
		// Kerberos, two NameNodes, and every block encrypted (privacy).
		{"hdfs-kerberos-privacy", func(b *testing.B) string { return testenv.StartKerberizedHDFS(b).Warehouse(b) },
			func(b *testing.B) warehouse.Options {
				c := testenv.StartKerberizedHDFS(b)
				return warehouse.Options{HDFS: warehouse.HDFSOptions{HadoopConf: c.ConfDir, Krb5Conf: c.Krb5Conf,
					Principal: "tributary@" + c.Realm, Keytab: c.Keytab}}
			}},
	}
	for _, kind := range kinds {
		// parquet-<codec>: the same records as Parquet files; iceberg-<codec>:
		// as Parquet files committed to an Iceberg table.
		for _, codec := range []string{"deflate", "snappy", "parquet-snappy", "parquet-zstd", "iceberg-snappy"} {
			format, table, name := loader.FormatAvro, "", codec
			if c, ok := strings.CutPrefix(codec, "parquet-"); ok {
				format, codec = loader.FormatParquet, c
			}
			if c, ok := strings.CutPrefix(codec, "iceberg-"); ok {
				format, codec, table = loader.FormatParquet, c, "db"
			}
			if table == "" {
				name = format + "-" + codec
			}
			b.Run(kind.name+"/"+name, func(b *testing.B) {
				kind.url(b) // start HDFS or S3 outside the timing
				var opts warehouse.Options
				if kind.opts != nil {
					opts = kind.opts(b)
				}
				var records, in, out int64
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					url := kind.url(b)
					b.StartTimer()
					sum, err := loader.Run(context.Background(), loader.Config{
						Brokers: env.Brokers, RegistryURL: env.RegistryURL, Topics: []string{"bench"},
						Warehouse: url, WarehouseOptions: opts, Format: format, Codec: codec, Table: table, Logger: quiet,
					})
					if err != nil {
						b.Fatal(err)
					}
					records += sum.Records
					in += sum.InputBytes
					out += sum.Bytes
				}
				secs := b.Elapsed().Seconds()
				b.ReportMetric(float64(records)/secs, "records/s")
				b.ReportMetric(float64(in)/secs/1e6, "MB/s")
				b.ReportMetric(float64(out)/float64(in), "out/in")
			})
		}
	}
}

// BenchmarkLoadVsFetch puts a load beside the fastest anything could read
// the same records: each iteration first consumes the whole topic with a
// bare kgo client (same fetch sizes as the loader, records counted and
// dropped), then loads it into a fresh local warehouse, then runs one more
// load that finds nothing new. Alternating them in one run keeps a busy
// machine from favouring either:
//
//	go test -run '^$' -bench 'BenchmarkLoadVsFetch$' -benchtime 3x ./loader/
//
// A second baseline reads the topic with bare kmsg Fetch requests to each
// partition's leader (the loader's own fetch sizes), the responses thrown
// away unparsed but for the batch headers that give the next offset: what
// fetching costs without any client's per-record work.
//
// fetch-records/s is the raw rate, records/s the load's (the whole run:
// locks, planning, files, fsyncs, commit, moves), load/fetch their ratio.
// fixed-ms is the wall time of the run that found nothing new: what every
// run pays whatever it loads (locks, recovery, planning, a manifest
// committed, pruning); a run's per-file costs (create, fsync, move) come
// on top and grow with partitions × hours, not with records.
// steady-load/fetch leaves fixed-ms out of the load: the ratio a run
// reaches once its records outweigh it. The cpu-ns/record figures are the
// process's CPU time (the broker runs in it too) per record, steadier
// than the rates on a busy machine.
//
// Codec cases are a codec, or deflate-<level> for a deflate level other
// than the default (Config.DeflateLevel): deflate-1 is the cheapest deflate.
func BenchmarkLoadVsFetch(b *testing.B) {
	loadVsFetch(b, 200_000, 4, []string{"deflate", "deflate-1", "snappy", "null"})
}

// BenchmarkLoadVsFetchLarge is BenchmarkLoadVsFetch at the scale of a
// warehouse fed terabytes a day: a million records in 12 partitions, so
// that a run's fixed cost weighs in the ratio as little as it does there:
//
//	go test -run '^$' -bench BenchmarkLoadVsFetchLarge -benchtime 2x -timeout 30m ./loader/
func BenchmarkLoadVsFetchLarge(b *testing.B) {
	loadVsFetch(b, 1_000_000, 12, []string{"deflate", "snappy"})
}

func loadVsFetch(b *testing.B, n int, parts int32, codecs []string) {
	env := loadertest.Start(b)
	env.CreateTopic(b, "bench", parts)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	env.Produce(b, "bench", loadertest.Schema(b, "pageview"), loadertest.PageViews(0, n, parts, from, 3*time.Hour))
	for _, name := range codecs {
		codec, lvl, _ := strings.Cut(name, "-")
		level, _ := strconv.Atoi(lvl)
		b.Run(name, func(b *testing.B) {
			var fetchTime, loadTime, fixedTime, fetchCPU, loadCPU, kmsgTime, kmsgCPU time.Duration
			var fetched, loaded, kmsgFetched int64
			for range b.N {
				start, cpu := time.Now(), cpuTime()
				fetched += rawFetch(b, env.Brokers, "bench", parts, int64(n))
				fetchTime += time.Since(start)
				fetchCPU += cpuTime() - cpu

				start, cpu = time.Now(), cpuTime()
				kmsgFetched += rawKmsgFetch(b, env.Brokers, "bench", parts)
				kmsgTime += time.Since(start)
				kmsgCPU += cpuTime() - cpu

				cfg := loader.Config{
					Brokers: env.Brokers, RegistryURL: env.RegistryURL, Topics: []string{"bench"},
					Warehouse: "file://" + b.TempDir(), Codec: codec, DeflateLevel: level, Logger: quiet,
				}
				start, cpu = time.Now(), cpuTime()
				sum, err := loader.Run(context.Background(), cfg)
				loadTime += time.Since(start)
				loadCPU += cpuTime() - cpu
				if err != nil {
					b.Fatal(err)
				}
				loaded += sum.Records

				start = time.Now()
				if sum, err := loader.Run(context.Background(), cfg); err != nil || sum.Records != 0 {
					b.Fatalf("the run after a load: %d records, %v", sum.Records, err)
				}
				fixedTime += time.Since(start)
			}
			fetchRate := float64(fetched) / fetchTime.Seconds()
			loadRate := float64(loaded) / loadTime.Seconds()
			b.ReportMetric(fetchRate, "fetch-records/s")
			b.ReportMetric(loadRate, "records/s")
			b.ReportMetric(loadRate/fetchRate, "load/fetch")
			kmsgRate := float64(kmsgFetched) / kmsgTime.Seconds()
			b.ReportMetric(kmsgRate, "kmsg-fetch-records/s")
			b.ReportMetric(loadRate/kmsgRate, "load/kmsg-fetch")
			b.ReportMetric(float64(kmsgCPU.Nanoseconds())/float64(kmsgFetched), "kmsg-fetch-cpu-ns/record")
			b.ReportMetric(float64(fixedTime.Milliseconds())/float64(b.N), "fixed-ms")
			if steady := loadTime - fixedTime; steady > 0 {
				b.ReportMetric(float64(loaded)/steady.Seconds()/fetchRate, "steady-load/fetch")
			}
			b.ReportMetric(float64(fetchCPU.Nanoseconds())/float64(fetched), "fetch-cpu-ns/record")
			b.ReportMetric(float64(loadCPU.Nanoseconds())/float64(loaded), "load-cpu-ns/record")
		})
	}
}

// rawFetch consumes partitions 0..parts-1 of topic from the start until n
// records arrived, with kgo's default fetch sizes, and returns n.
func rawFetch(b testing.TB, brokers []string, topic string, parts int32, n int64) int64 {
	b.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := range parts {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
	)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	var got int64
	for got < n {
		fs := cl.PollRecords(context.Background(), 10000)
		if err := fs.Err0(); err != nil {
			b.Fatal(err)
		}
		got += int64(fs.NumRecords())
	}
	return got
}

// rawKmsgFetch reads partitions 0..parts-1 of topic from their log start
// to their high watermark with bare kmsg Fetch requests, one in flight per
// leader, reading only the batch headers, and returns the records fetched
// (offsets covered).
func rawKmsgFetch(b testing.TB, brokers []string, topic string, parts int32) int64 {
	b.Helper()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		b.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		b.Fatal(err)
	}
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		b.Fatal(err)
	}
	next, end := map[int32]int64{}, map[int32]int64{}
	leaders := map[int32][]int32{}
	for _, t := range meta.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition >= parts {
				continue
			}
			s, _ := starts.Lookup(topic, p.Partition)
			e, _ := ends.Lookup(topic, p.Partition)
			next[p.Partition], end[p.Partition] = s.Offset, e.Offset
			leaders[p.Leader] = append(leaders[p.Leader], p.Partition)
		}
	}
	var mu sync.Mutex
	var total int64
	var g errgroup.Group
	for leader, ps := range leaders {
		next := maps.Clone(next) // this leader's goroutine's own
		g.Go(func() error {
			for {
				req := kmsg.NewPtrFetchRequest()
				req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 500, 1, 64<<20, -1
				t := kmsg.NewFetchRequestTopic()
				t.Topic = topic
				for _, p := range ps {
					if next[p] < end[p] {
						rp := kmsg.NewFetchRequestTopicPartition()
						rp.Partition, rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes = p, next[p], -1, 1<<20
						t.Partitions = append(t.Partitions, rp)
					}
				}
				if len(t.Partitions) == 0 {
					return nil
				}
				req.Topics = append(req.Topics, t)
				resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
				if err != nil {
					return err
				}
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
							return err
						}
						from := next[rp.Partition]
						next[rp.Partition] = batchesEnd(rp.RecordBatches, from)
						mu.Lock()
						total += next[rp.Partition] - from
						mu.Unlock()
					}
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return total
}

// batchesEnd returns the offset after the last whole batch in b, from the
// batch headers alone (base offset at 0, length at 8, last offset delta at
// 23).
func batchesEnd(b []byte, from int64) int64 {
	for len(b) >= 27 {
		n := 12 + int(binary.BigEndian.Uint32(b[8:]))
		if n > len(b) {
			break
		}
		from = max(from, int64(binary.BigEndian.Uint64(b))+int64(int32(binary.BigEndian.Uint32(b[23:])))+1)
		b = b[n:]
	}
	return from
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
