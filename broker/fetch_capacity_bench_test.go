package broker_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/tributary-io/tributary/internal/testenv"
)

// Shape of BenchmarkFetchCapacity's data: capacityPartitions partitions of
// capacityBatches batches of 50 200-byte records.
const (
	capacityPartitions = 4
	capacityBatches    = 1500 // ~16 MB per partition
)

// BenchmarkFetchCapacity measures how fast the broker can serve fetches, with
// no client decoding in the way, against what the machine allows for the
// same bytes:
//   - broker: Fetch requests encoded with kmsg and written to a plain TCP
//     connection, one at a time, each asking every partition for
//     partition-bytes from where the last one ended; response bytes are read
//     and discarded.
//   - sendfile: the segment files of the same partitions moved with
//     sendfile over loopback in pieces of partition-bytes to a receiver that
//     discards them, the ceiling of a zero-copy fetch.
//
// 64 KiB per partition (256 KiB per request, near the paper's 200 KB
// fetches) shows the cost per request, 1 MiB the cost per byte.
//
// Both report MB/s (10^6 bytes of response or file) and CPU time per MB of
// the whole process, so the ratio survives a noisy machine better than the
// wall-clock rates do.
//
//	go test -run '^$' -bench BenchmarkFetchCapacity -benchtime 2s -count 6 ./broker/
func BenchmarkFetchCapacity(b *testing.B) {
	br := testenv.StartBroker(b)
	cl := produceCapacityData(b, br.Addr)
	segments, err := filepath.Glob(filepath.Join(br.DataDir, "capacity-*", "*.log"))
	if err != nil || len(segments) < capacityPartitions {
		b.Fatalf("segment files of the bench topic: %v (found %d)", err, len(segments))
	}

	for _, per := range []int32{64 << 10, 1 << 20} {
		strides := fetchStrides(b, cl, per)
		b.Run(fmt.Sprintf("partition-bytes=%d/broker", per), func(b *testing.B) {
			benchRawFetch(b, br.Addr, per, strides)
		})
		b.Run(fmt.Sprintf("partition-bytes=%d/sendfile", per), func(b *testing.B) {
			benchSendfile(b, segments, int64(per))
		})
	}
}

func benchRawFetch(b *testing.B, addr string, per int32, strides []int64) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	offsets := make([]int64, capacityPartitions)
	buf := make([]byte, 1<<20)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("capacity"))
	var moved int64
	cpu := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		req := capacityFetch(offsets, per)
		frame := f.AppendRequest(nil, req, int32(i))
		if _, err := conn.Write(frame); err != nil {
			b.Fatal(err)
		}
		n, err := discardFrame(conn, buf)
		if err != nil {
			b.Fatal(err)
		}
		moved += n
		for p := range offsets {
			offsets[p] = (offsets[p] + strides[p]) % (capacityBatches * 50)
		}
	}
	b.StopTimer()
	reportCapacity(b, moved, cpuTime()-cpu)
}

func benchSendfile(b *testing.B, segments []string, per int64) {
	files := make([]*os.File, len(segments))
	sizes := make([]int64, len(segments))
	for i, s := range segments {
		f, err := os.Open(s)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			b.Fatal(err)
		}
		files[i], sizes[i] = f, st.Size()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	received := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			received <- err
			return
		}
		defer c.Close()
		// Read as the broker's client does: into one 1 MiB buffer.
		buf := make([]byte, 1<<20)
		for {
			if _, err := c.Read(buf); err != nil {
				if err == io.EOF {
					err = nil
				}
				received <- err
				return
			}
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	pos := make([]int64, len(files))
	var moved int64
	cpu := cpuTime()
	b.ResetTimer()
	for range b.N {
		// One op moves what one broker op asks for.
		for i, f := range files {
			n := min(per, sizes[i]-pos[i])
			if err := sendfileAll(raw, f.Fd(), pos[i], n); err != nil {
				b.Fatal(err)
			}
			moved += n
			if pos[i] += n; pos[i] == sizes[i] {
				pos[i] = 0
			}
		}
	}
	conn.Close()
	if err := <-received; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportCapacity(b, moved, cpuTime()-cpu)
}

func reportCapacity(b *testing.B, moved int64, cpu interface{ Seconds() float64 }) {
	b.ReportMetric(float64(moved)/1e6/b.Elapsed().Seconds(), "MB/s")
	b.ReportMetric(cpu.Seconds()*1e6/(float64(moved)/1e6), "cpu-µs/MB")
}

// produceCapacityData fills the bench topic and returns the client, for
// fetchStrides.
func produceCapacityData(b *testing.B, addr string) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("capacity"),
		kgo.ManualFlushing(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(50*capacityPartitions+1))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	ctx := context.Background()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "capacity", capacityPartitions, 1
	create.Topics = append(create.Topics, ct)
	if _, err := create.RequestWith(ctx, cl); err != nil {
		b.Fatal(err)
	}
	value := bytes.Repeat([]byte("z"), benchValueSize)
	for range capacityBatches {
		for p := range int32(capacityPartitions) {
			for range 50 {
				cl.Produce(ctx, &kgo.Record{Value: value, Partition: p}, nil)
			}
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return cl
}

// fetchStrides returns, per partition, how many offsets a fetch of per
// bytes covers: a fetch returns whole batches up to the partition limit,
// and every batch holds 50 records, so fetches start on batch boundaries.
func fetchStrides(b *testing.B, cl *kgo.Client, per int32) []int64 {
	resp, err := capacityFetch(make([]int64, capacityPartitions), per).RequestWith(context.Background(), cl)
	if err != nil {
		b.Fatal(err)
	}
	strides := make([]int64, capacityPartitions)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
				b.Fatalf("partition %d: error %d, %d bytes", p.Partition, p.ErrorCode, len(p.RecordBatches))
			}
			// The base offset and length of each batch, no record decoding.
			var n int64
			for rb := p.RecordBatches; len(rb) >= 12; {
				size := 12 + int(binary.BigEndian.Uint32(rb[8:]))
				if size > len(rb) {
					break
				}
				rb, n = rb[size:], n+50
			}
			strides[p.Partition] = n
		}
	}
	return strides
}

// capacityFetch asks each partition for per bytes from offsets[p]; the data
// is there, so it is answered at once.
func capacityFetch(offsets []int64, per int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxWaitMillis, req.MinBytes = 500, 1
	req.MaxBytes = int32(len(offsets))*per + 1<<20
	t := kmsg.NewFetchRequestTopic()
	t.Topic = "capacity"
	for p, o := range offsets {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = int32(p), o, per
		fp.CurrentLeaderEpoch, fp.LogStartOffset = -1, -1
		t.Partitions = append(t.Partitions, fp)
	}
	req.Topics = append(req.Topics, t)
	return req
}

// discardFrame reads one response frame into buf, piece by piece, and
// returns its size including the size prefix.
func discardFrame(c net.Conn, buf []byte) (int64, error) {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return 0, err
	}
	left := int64(binary.BigEndian.Uint32(size[:]))
	total := left + 4
	for left > 0 {
		n, err := c.Read(buf[:min(int64(len(buf)), left)])
		left -= int64(n)
		if err != nil && left > 0 {
			return 0, fmt.Errorf("response cut short: %w", err)
		}
	}
	return total, nil
}

// sendfileAll moves n bytes at pos of fd to the socket, waiting for room.
func sendfileAll(raw interface {
	Write(func(fd uintptr) bool) error
}, fd uintptr, pos, n int64) error {
	var werr error
	err := raw.Write(func(sock uintptr) bool {
		for n > 0 {
			w, err := unix.Sendfile(int(sock), int(fd), &pos, int(n))
			n -= int64(max(w, 0))
			switch {
			case err == unix.EAGAIN:
				return false
			case err == unix.EINTR:
				continue
			case err != nil:
				werr = err
				return true
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	return werr
}
