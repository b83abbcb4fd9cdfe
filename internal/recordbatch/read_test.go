package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rec is a record as a test writes it: its offset delta is its index
// unless delta is set.
type rec struct {
	key, value []byte
	tsDelta    int64
	delta      int32
	headers    int
}

// encodeRecords writes records the way a producer does.
func encodeRecords(recs []rec) []byte {
	var out []byte
	for i, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.tsDelta, OffsetDelta: int32(i), Key: r.key, Value: r.value}
		if r.delta != 0 {
			kr.OffsetDelta = r.delta
		}
		for h := range r.headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: fmt.Sprintf("h%d", h), Value: []byte("v")})
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1) // the body after a one-byte zero length
		out = kr.AppendTo(out)
	}
	return out
}

// makeBatch frames records (already compressed if attrs says so) as a v2
// batch of count records at base, with a correct length and CRC.
func makeBatch(base int64, attrs int16, count int32, lastDelta int32, records []byte) []byte {
	rb := kmsg.RecordBatch{
		FirstOffset: base, Magic: 2, Attributes: attrs, LastOffsetDelta: lastDelta,
		FirstTimestamp: 1_000_000, MaxTimestamp: 2_000_000, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: count, Records: records,
	}
	return fix(rb.AppendTo(nil))
}

// fix sets a batch's length and CRC to match its bytes, so that a test can
// make a field lie and still get past the CRC.
func fix(b []byte) []byte {
	binary.BigEndian.PutUint32(b[OffLength:], uint32(len(b)-LengthPrefix))
	binary.BigEndian.PutUint32(b[OffCRC:], crc32.Checksum(b[OffAttributes:], castagnoli))
	return b
}

func plain(base int64, recs ...rec) []byte {
	return makeBatch(base, 0, int32(len(recs)), int32(len(recs)-1), encodeRecords(recs))
}

func kv(k, v string) rec { return rec{key: []byte(k), value: []byte(v)} }

func TestWalkReadsRecordsInPlace(t *testing.T) {
	a := plain(10, kv("a", "one"), rec{value: []byte("two"), tsDelta: 5, headers: 2})
	b := plain(12, kv("c", "three"))
	resp := append(append([]byte{}, a...), b...)
	recs, next, err := Walk(nil, resp, 11, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if next != 13 {
		t.Errorf("next = %d, want 13", next)
	}
	want := []Record{
		{Offset: 11, Timestamp: 1_000_005, Value: []byte("two")},
		{Offset: 12, Timestamp: 1_000_000, Key: []byte("c"), Value: []byte("three")},
	}
	if fmt.Sprint(recs) != fmt.Sprint(want) {
		t.Errorf("records = %v, want %v", recs, want)
	}
	if recs[0].Key != nil {
		t.Errorf("a null key reads as %q, want nil", recs[0].Key)
	}
	// In place: the value is the response's bytes, not a copy.
	recs[1].Value[0] = 'T'
	if !bytes.Contains(resp, []byte("Thre")) {
		t.Error("the value is a copy of the response's bytes")
	}
}

func TestWalkLogAppendTime(t *testing.T) {
	b := makeBatch(0, logAppendTime, 2, 1, encodeRecords([]rec{kv("a", "1"), {value: []byte("2"), tsDelta: 7}}))
	recs, _, err := Walk(nil, b, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Timestamp != 2_000_000 {
			t.Errorf("offset %d: timestamp %d, want the batch's append time 2000000", r.Offset, r.Timestamp)
		}
	}
}

func TestWalkSkipsControlBatches(t *testing.T) {
	marker := makeBatch(3, controlBatch, 1, 0, encodeRecords([]rec{{key: []byte{0, 0, 0, 1}, value: []byte{0, 0, 0, 0, 0, 0}}}))
	resp := append(plain(0, kv("a", "1"), kv("b", "2"), kv("c", "3")), marker...)
	resp = append(resp, plain(4, kv("d", "4"))...)
	recs, next, err := Walk(nil, resp, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[3].Offset != 4 || next != 5 {
		t.Errorf("got %d records (last %v), next %d; want 4, the last at 4, next 5", len(recs), recs[len(recs)-1], next)
	}
	// A response that ends with a marker still moves the offset past it.
	if _, next, err := Walk(nil, marker, 3, 1<<20); err != nil || next != 4 {
		t.Errorf("a marker alone: next %d, %v; want 4", next, err)
	}
}

// A fetch response stops where its byte limit falls, inside a batch: the
// walk ends at the last whole batch, whatever the cut.
func TestWalkStopsAtTruncatedBatch(t *testing.T) {
	first := plain(0, kv("a", "1"), kv("b", "2"))
	resp := append(append([]byte{}, first...), plain(2, kv("c", "3"), kv("d", "4"))...)
	for cut := len(first); cut < len(resp); cut++ {
		recs, next, err := Walk(nil, resp[:cut], 0, 1<<20)
		if err != nil || len(recs) != 2 || next != 2 {
			t.Fatalf("cut at %d of %d: %d records, next %d, %v; want the first batch's 2, next 2", cut, len(resp), len(recs), next, err)
		}
	}
	for cut := range len(first) {
		recs, next, err := Walk(nil, resp[:cut], 0, 1<<20)
		if err != nil || len(recs) != 0 || next != 0 {
			t.Fatalf("cut at %d: %d records, next %d, %v; want none, next 0", cut, len(recs), next, err)
		}
	}
}

func compress(t testing.TB, codec int16, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch codec {
	case 1:
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
	case 2:
		return snappy.Encode(nil, b)
	case 3:
		w := lz4.NewWriter(&buf)
		w.Write(b)
		w.Close()
	case 4:
		w, _ := zstd.NewWriter(&buf)
		w.Write(b)
		w.Close()
	}
	return buf.Bytes()
}

func TestWalkCompressed(t *testing.T) {
	recs := []rec{kv("a", strings.Repeat("x", 300)), kv("b", "2"), kv("c", "3")}
	for codec, name := range map[int16]string{1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"} {
		t.Run(name, func(t *testing.T) {
			b := makeBatch(100, codec, 3, 2, compress(t, codec, encodeRecords(recs)))
			got, next, err := Walk(nil, b, 101, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0].Offset != 101 || string(got[1].Value) != "3" || next != 103 {
				t.Errorf("got %v, next %d", got, next)
			}
			// Past the limit, the batch is refused, not expanded.
			if _, _, err := Walk(nil, b, 100, 100); !errors.Is(err, ErrCorrupt) {
				t.Errorf("limit of 100 bytes: %v, want a corrupt batch", err)
			}
		})
	}
}

// Every lie a batch can tell gives an error naming the batch's offset.
func TestWalkRefusesCorruptBatches(t *testing.T) {
	good := func() []byte { return plain(42, kv("k", "value"), kv("k2", "value2")) }
	// recAt is where the first record's fields start: after its length.
	const rec0 = HeaderSize + 1
	cases := []struct {
		name   string
		batch  func() []byte
		reason string
	}{
		{"bad CRC", func() []byte { b := good(); b[len(b)-1] ^= 1; return b }, "CRC32C"},
		{"magic 1", func() []byte { b := good(); b[OffMagic] = 1; return b }, "magic 1"},
		{"length below a header", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[OffLength:], 20)
			return b
		}, "less than a batch header"},
		{"negative length", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[OffLength:], 0xffffff00)
			return b
		}, "less than a batch header"},
		{"more records than bytes", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[OffRecordCount:], 2)
			binary.BigEndian.PutUint32(b[OffLastOffsetDelta:], 1<<30)
			binary.BigEndian.PutUint32(b[OffRecordCount:], 1<<30)
			return fix(b)
		}, "record 2 of 1073741824"},
		{"count past last offset delta", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[OffRecordCount:], 5)
			return fix(b)
		}, "do not fit last offset delta"},
		{"negative count", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[OffRecordCount:], 0xffffffff)
			return fix(b)
		}, "do not fit"},
		{"fewer records than bytes", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[OffRecordCount:], 1)
			return fix(b)
		}, "bytes after its 1 records"},
		{"negative record length", func() []byte {
			b := good()
			b[HeaderSize] = 0x03 // zigzag -2
			return fix(b)
		}, "record 0 of 2: length -2"},
		{"record length past the batch", func() []byte {
			b := good()
			b[HeaderSize] = 0x7e // 63
			return fix(b)
		}, "record 0 of 2: length 63"},
		{"record length a varint too long", func() []byte {
			b := good()
			b = append(b[:HeaderSize:HeaderSize], bytes.Repeat([]byte{0xff}, 11)...)
			return fix(b)
		}, "length cut short"},
		{"huge key length", func() []byte {
			b := good()
			// attrs, ts delta 0, offset delta 0, then the key length.
			b[rec0+3] = 0x7e
			return fix(b)
		}, "key length"},
		{"key length below -1", func() []byte {
			b := good()
			b[rec0+3] = 0x05 // -3
			return fix(b)
		}, "key length"},
		{"huge value length", func() []byte {
			b := good()
			b[rec0+5] = 0x7e // after the one-byte key "k"
			return fix(b)
		}, "value length"},
		{"negative header count", func() []byte {
			b := good()
			b[rec0+11] = 0x01 // -1, after the five-byte value
			return fix(b)
		}, "header count -1"},
		{"huge header count", func() []byte {
			b := good()
			b[rec0+11] = 0x7e
			return fix(b)
		}, "header 0's key"},
		{"offset delta past the batch", func() []byte {
			return makeBatch(42, 0, 2, 1, encodeRecords([]rec{kv("a", "1"), {value: []byte("2"), delta: 9}}))
		}, "offset delta 9"},
		{"offset deltas out of order", func() []byte {
			return makeBatch(42, 0, 2, 5, encodeRecords([]rec{{value: []byte("1"), delta: 3}, {value: []byte("2"), delta: 2}}))
		}, "offset delta 2 after 3"},
		{"snappy that is not", func() []byte { return makeBatch(42, 2, 1, 0, []byte("not snappy")) }, "snappy"},
		{"unknown codec", func() []byte { return makeBatch(42, 6, 1, 0, []byte("x")) }, "codec"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := plain(40, kv("a", "1"), kv("b", "2"))
			recs, next, err := Walk(nil, append(before, c.batch()...), 0, 1<<20)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if e.Offset != 42 || !strings.Contains(err.Error(), "offset 42") || !strings.Contains(err.Error(), c.reason) {
				t.Errorf("err = %q, want it to name offset 42 and say %q", err, c.reason)
			}
			if len(recs) != 2 || next != 42 {
				t.Errorf("before the bad batch: %d records, next %d; want 2, next 42", len(recs), next)
			}
		})
	}
}

// Compressed batches expand into the arena's spare room while they fit,
// one after the other, and into buffers of their own once they do not.
func TestWalkArena(t *testing.T) {
	raw := encodeRecords([]rec{kv("a", strings.Repeat("x", 100)), kv("b", strings.Repeat("y", 100))})
	batch := func(base int64) []byte { return makeBatch(base, 2, 2, 1, compress(t, 2, raw)) }
	resp := slices.Concat(batch(0), batch(2), batch(4))
	arena := make([]byte, 0, 2*len(raw)+10)
	recs, next, err := WalkArena(nil, &arena, resp, 0, 1<<20)
	if err != nil || len(recs) != 6 || next != 6 {
		t.Fatalf("%d records, next %d, %v", len(recs), next, err)
	}
	if len(arena) != 2*len(raw) {
		t.Fatalf("arena holds %d bytes, want the first two batches' %d", len(arena), 2*len(raw))
	}
	for i, r := range recs {
		if want := i < 4; inside(arena, r.Value) != want {
			t.Errorf("record %d in the arena: %v, want %v", i, !want, want)
		}
	}
}

// inside says whether b's bytes lie within a's.
func inside(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(&a[0]))
	p := uintptr(unsafe.Pointer(&b[0]))
	return p >= start && p+uintptr(len(b)) <= start+uintptr(len(a))
}

// Batches of every codec expand into the arena, not only raw snappy: a
// loader reading gzip, lz4 or zstd topics reuses its buffers too.
func TestWalkArenaEveryCodec(t *testing.T) {
	raw := encodeRecords([]rec{kv("a", strings.Repeat("x", 1000)), kv("b", strings.Repeat("y", 1000))})
	for codec, name := range map[int16]string{1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"} {
		arena := make([]byte, 0, len(raw))
		recs, _, err := WalkArena(nil, &arena, makeBatch(0, codec, 2, 1, compress(t, codec, raw)), 0, 1<<20)
		if err != nil || len(recs) != 2 {
			t.Fatalf("%s: %d records, %v", name, len(recs), err)
		}
		if len(arena) != len(raw) || !inside(arena, recs[0].Value) || !inside(arena, recs[1].Value) {
			t.Errorf("%s: the records were not expanded into the arena (it holds %d bytes of %d)", name, len(arena), len(raw))
		}
	}
}
