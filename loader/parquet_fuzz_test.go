package loader

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/linkedin/goavro/v2"
	"github.com/parquet-go/parquet-go"

	"github.com/tributary-io/tributary/schema"
)

// FuzzParquetRecord: whatever bytes a producer sends as the body of a
// record of testdata/schemas/alltypes.avsc (every Avro type), a value the
// decoder accepts is written to a Parquet file, or refused as a bad record
// (schema.ErrBadBody: it goes to _errors) when it breaks a rule Avro
// decoders do not check (a uuid that is not one, a decimal beyond its
// precision); never a panic, and a refused record leaves the file
// writable, with nothing of it written.
func FuzzParquetRecord(f *testing.F) {
	text, err := os.ReadFile("../testdata/schemas/alltypes.avsc")
	if err != nil {
		f.Fatal(err)
	}
	codec, err := goavro.NewCodec(string(text))
	if err != nil {
		f.Fatal(err)
	}
	ps, root, err := parquetSchema(avro.MustParse(string(text)))
	if err != nil {
		f.Fatal(err)
	}
	tf := &tableFile{w: schema.Writer{ID: 1}, text: string(text), schema: ps, node: root}
	// The loader decodes only bodies its header walk found to be one
	// whole value (partWriter.readRecord): a count claiming more entries
	// than the body has bytes never reaches the decoder.
	layout := schema.NewHeaderLayout(avro.MustParse(string(text)), schema.DefaultHeaderField)
	// A seed: every field at its smallest (zeros decode as 0, "", [], {}
	// and the first branch or symbol).
	f.Add(make([]byte, 64))
	f.Add(append(make([]byte, 40), 0x02, 0x04, 0x06, 0x08, 0x0a, 0x01, 0x00))
	f.Fuzz(func(t *testing.T, body []byte) {
		if layout.Check(body) != nil {
			return
		}
		v, rest, err := codec.NativeFromBinary(body)
		if err != nil || len(rest) > 0 {
			return
		}
		var buf bytes.Buffer
		pf := newParquetFile(nopCloser{&buf}, tf, "snappy", nil)
		err = pf.Append(v, len(body))
		if err != nil && !errors.Is(err, schema.ErrBadBody) {
			t.Fatalf("a decoded value failed as no bad record does: %v (%v)", err, v)
		}
		if err := pf.Close(); err != nil {
			t.Fatal(err)
		}
		wantRows := int64(1)
		if err != nil {
			wantRows = 0
		}
		r, rerr := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if rerr != nil || r.NumRows() != wantRows {
			t.Fatalf("the file does not read back with %d rows: %v", wantRows, rerr)
		}
	})
}
