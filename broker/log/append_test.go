package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/recordbatch"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

func TestAppendValidation(t *testing.T) {
	good := func() []byte { return makeBatch(batchOpts{records: 3}) }
	tests := []struct {
		name    string
		batch   func() []byte
		wantErr error
	}{
		{"shorter than a header", func() []byte { return good()[:40] }, ErrCorruptBatch},
		{"length field too long", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[recordbatch.OffLength:], uint32(len(b)))
			return b
		}, ErrCorruptBatch},
		{"length field too short", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[recordbatch.OffLength:], uint32(len(b)-recordbatch.LengthPrefix-1))
			return b
		}, ErrCorruptBatch},
		{"length below minimum", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[recordbatch.OffLength:], 10)
			return b
		}, ErrCorruptBatch},
		{"buffer has trailing bytes", func() []byte { return append(good(), 0) }, ErrCorruptBatch},
		{"magic 0", func() []byte { b := good(); b[recordbatch.OffMagic] = 0; return b }, ErrUnsupportedMagic},
		{"magic 1", func() []byte { b := good(); b[recordbatch.OffMagic] = 1; return b }, ErrUnsupportedMagic},
		{"flipped crc byte", func() []byte { b := good(); b[recordbatch.OffCRC+2] ^= 0x10; return b }, ErrCorruptBatch},
		{"flipped record byte", func() []byte { b := good(); b[len(b)-1] ^= 1; return b }, ErrCorruptBatch},
		{"zero records", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[recordbatch.OffRecordCount:], 0)
			binary.BigEndian.PutUint32(b[recordbatch.OffLastOffsetDelta:], 0xffffffff)
			return rbtest.FixBatch(b)
		}, ErrCorruptBatch},
		{"last offset delta mismatch", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[recordbatch.OffLastOffsetDelta:], 5)
			return rbtest.FixBatch(b)
		}, ErrCorruptBatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openLog(t, dir, testConfig())
			mustAppend(t, l, good())
			leo, size := l.LogEndOffset(), l.Size()
			seg := segmentFiles(t, dir)[0]
			fsize := fileSize(t, seg)

			_, err := l.Append(tt.batch())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Append error = %v, want %v", err, tt.wantErr)
			}
			t.Logf("error text: %v", err)
			if l.LogEndOffset() != leo || l.Size() != size || fileSize(t, seg) != fsize {
				t.Fatalf("rejected batch left a trace: LEO %d→%d, size %d→%d, file %d→%d",
					leo, l.LogEndOffset(), size, l.Size(), fsize, fileSize(t, seg))
			}
		})
	}
}

func TestAppendAssignsOffsetsAndWritesBytesUnchanged(t *testing.T) {
	dir := t.TempDir()
	l, _ := openLog(t, dir, testConfig())
	var want []byte
	for i, n := range []int{1, 5, 2} {
		b := makeBatch(batchOpts{records: n})
		binary.BigEndian.PutUint64(b, 987654) // the producer's value is ignored
		orig := bytes.Clone(b)
		res := mustAppend(t, l, b)
		wantBase := []int64{0, 1, 6}[i]
		if res.BaseOffset != wantBase || res.LastOffset != wantBase+int64(n)-1 || res.Duplicate {
			t.Fatalf("batch %d: got %+v, want base %d", i, res, wantBase)
		}
		if got := int64(binary.BigEndian.Uint64(b)); got != wantBase {
			t.Fatalf("caller's buffer base offset = %d, want %d", got, wantBase)
		}
		if !bytes.Equal(b[8:], orig[8:]) {
			t.Fatal("Append changed bytes other than the base offset")
		}
		want = append(want, b...)
	}
	if l.LogEndOffset() != 8 {
		t.Fatalf("LogEndOffset = %d, want 8", l.LogEndOffset())
	}
	mustFlush(t, l)
	s, err := l.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s); !bytes.Equal(got, want) {
		t.Fatal("bytes read differ from bytes appended")
	}
}

func TestRollBySize(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	b := makeBatch(batchOpts{records: 2, valueSize: 100})
	cfg.SegmentBytes = int64(len(b))*3 + 10 // three batches per segment
	l, _ := openLog(t, dir, cfg)
	for range 10 {
		mustAppend(t, l, makeBatch(batchOpts{records: 2, valueSize: 100}))
	}
	files := segmentFiles(t, dir)
	if len(files) != 4 {
		t.Fatalf("%d segments, want 4: %v", len(files), files)
	}
	for i, base := range []int64{0, 6, 12, 18} {
		want, _ := segmentPaths(dir, base)
		if files[i] != want {
			t.Fatalf("segment %d is %s, want %s", i, files[i], want)
		}
		if sz := fileSize(t, files[i]); sz > cfg.SegmentBytes {
			t.Fatalf("segment %s has %d bytes, more than SegmentBytes %d", files[i], sz, cfg.SegmentBytes)
		}
	}
	// A batch larger than SegmentBytes still goes in, alone in its segment.
	big := makeBatch(batchOpts{valueSize: int(cfg.SegmentBytes) * 2})
	res := mustAppend(t, l, big)
	mustAppend(t, l, makeBatch(batchOpts{}))
	if got := len(segmentFiles(t, dir)); got != 6 {
		t.Fatalf("%d segments after an oversized batch, want 6", got)
	}
	mustFlush(t, l)
	s, err := l.Read(res.BaseOffset, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Pos != 0 || s.Size != int64(len(big)) {
		t.Fatalf("oversized batch read as pos %d size %d, want 0, %d", s.Pos, s.Size, len(big))
	}
	s.Release()
}

func TestRollByAge(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	cfg := testConfig()
	cfg.SegmentAge = time.Hour
	cfg.Clock = clock.Now
	l, _ := openLog(t, dir, cfg)

	mustAppend(t, l, makeBatch(batchOpts{}))
	clock.Advance(59 * time.Minute)
	mustAppend(t, l, makeBatch(batchOpts{}))
	if n := len(segmentFiles(t, dir)); n != 1 {
		t.Fatalf("%d segments before SegmentAge, want 1", n)
	}
	clock.Advance(time.Minute)
	res := mustAppend(t, l, makeBatch(batchOpts{}))
	if n := len(segmentFiles(t, dir)); n != 2 || res.BaseOffset != 2 {
		t.Fatalf("%d segments after SegmentAge (batch at %d), want 2 (batch at 2)", n, res.BaseOffset)
	}
	// The age counts from the new segment's first batch.
	clock.Advance(30 * time.Minute)
	mustAppend(t, l, makeBatch(batchOpts{}))
	if n := len(segmentFiles(t, dir)); n != 2 {
		t.Fatalf("%d segments, want 2", n)
	}
}

func TestAppendAfterClose(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(makeBatch(batchOpts{})); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
	if _, err := l.Read(0, 100); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v, want ErrClosed", err)
	}
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
}

func TestWithDefaults(t *testing.T) {
	c := Config{}.WithDefaults()
	if c.SegmentBytes != 1<<30 || c.FlushMessages != 10000 || c.FlushInterval != 200*time.Millisecond ||
		c.RetentionAge != 7*24*time.Hour || c.RetentionBytes != -1 || c.IndexIntervalBytes != 4096 ||
		c.RetentionCheckInterval != 5*time.Minute || c.Clock == nil {
		t.Fatalf("defaults: %+v", c)
	}
	if c := (Config{SegmentBytes: 1 << 40}).WithDefaults(); c.SegmentBytes != MaxSegmentBytes {
		t.Fatalf("SegmentBytes not capped: %d", c.SegmentBytes)
	}
	if c := (Config{RetentionAge: -1}).WithDefaults(); c.RetentionAge >= 0 {
		t.Fatal("negative RetentionAge (keep forever) was replaced")
	}
}
