package dataapi

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/netserver"
)

// TestFetchEncodingMatchesKmsg writes Fetch responses of every advertised
// version over a real TCP connection (so through sendfile) and decodes them
// with kmsg: the hand-written encoder must agree with the reference one, and
// only the non-record bytes may pass through user space.
func TestFetchEncodingMatchesKmsg(t *testing.T) {
	records := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	path := filepath.Join(t.TempDir(), "segment")
	prefix := []byte("junk before the batch")
	if err := os.WriteFile(path, append(prefix, records...), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	for v := fetchVersions().Min; v <= fetchVersions().Max; v++ {
		topics := []fetchTopic{
			{name: "pageviews", partitions: []fetchPartition{
				{partition: 0, highWatermark: 42, logStart: 7, records: log.Slice{File: f, Pos: int64(len(prefix)), Size: int64(len(records))}},
				{partition: 3, errorCode: 1, highWatermark: -1, logStart: -1},
			}},
			{name: "clicks", partitions: []fetchPartition{{partition: 1, highWatermark: 5, logStart: 0}}},
		}
		req := &kafkaapi.Request{Request: &kmsg.FetchRequest{Version: v}, CorrelationID: 77}
		userBefore, sentBefore := FetchCopyStats()
		resp := newFetchResponse(req, topics)
		body := writeAndReadBack(t, resp, server, client, 77, v >= 12)
		got := kmsg.NewPtrFetchResponse()
		got.SetVersion(v)
		if err := got.ReadFrom(body); err != nil {
			t.Fatalf("v%d: kmsg cannot decode our response: %v", v, err)
		}
		if len(got.Topics) != 2 || got.Topics[0].Topic != "pageviews" || got.Topics[1].Topic != "clicks" {
			t.Fatalf("v%d: topics %+v", v, got.Topics)
		}
		p0 := got.Topics[0].Partitions[0]
		if p0.HighWatermark != 42 || !bytes.Equal(p0.RecordBatches, records) {
			t.Fatalf("v%d: partition 0: hw %d, %d record bytes (want 42, %d)", v, p0.HighWatermark, len(p0.RecordBatches), len(records))
		}
		if v >= 5 && p0.LogStartOffset != 7 {
			t.Fatalf("v%d: log start %d, want 7", v, p0.LogStartOffset)
		}
		if p3 := got.Topics[0].Partitions[1]; p3.Partition != 3 || p3.ErrorCode != 1 || len(p3.RecordBatches) != 0 {
			t.Fatalf("v%d: partition 3: %+v", v, p3)
		}
		if p1 := got.Topics[1].Partitions[0]; p1.Partition != 1 || p1.HighWatermark != 5 {
			t.Fatalf("v%d: clicks partition: %+v", v, p1)
		}
		userAfter, sentAfter := FetchCopyStats()
		if sent := sentAfter - sentBefore; sent != int64(len(records)) {
			t.Fatalf("v%d: %d bytes went out with sendfile, want the %d record bytes", v, sent, len(records))
		}
		if user := userAfter - userBefore; user != resp.size+4-int64(len(records)) {
			t.Fatalf("v%d: %d bytes went through user space, want only the %d header bytes", v, user, resp.size+4-int64(len(records)))
		}
	}
}

// fetchVersions are the Fetch versions this package registers.
func fetchVersions() kafkaapi.Versions {
	r := kafkaapi.NewRegistry()
	New(Config{}).Register(r)
	a, _ := r.Lookup(1)
	return a.Versions
}

// writeAndReadBack writes resp on server, reads its frame on client, checks
// the correlation id and returns the body after the response header
// (whose tagged fields flexibleHeader says are there).
func writeAndReadBack(t *testing.T, resp netserver.Response, server, client net.Conn, corr int32, flexibleHeader bool) []byte {
	t.Helper()
	written := make(chan error, 1)
	go func() { written <- resp.Send(server) }()
	var size [4]byte
	if _, err := io.ReadFull(client, size[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(client, body); err != nil {
		t.Fatal(err)
	}
	if err := <-written; err != nil {
		t.Fatalf("writing the response: %v", err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body = body[4:]
	if flexibleHeader {
		var err error
		if body, err = netserver.SkipTags(body); err != nil {
			t.Fatalf("response header: %v", err)
		}
	}
	return body
}
