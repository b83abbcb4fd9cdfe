package loader

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/linkedin/goavro/v2"
)

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

// checkOCF writes values as Avro "bytes" records with the given codec (and
// deflate level) and reads them back with goavro's OCF reader.
func checkOCF(t *testing.T, codec string, level int, values [][]byte) {
	t.Helper()
	var buf bytes.Buffer
	w, err := newOCF(nopCloser{&buf}, `"bytes"`, codec, level, map[string]string{"tributary.topic": "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		body := binary.AppendVarint(nil, int64(len(v)))
		if err := w.Append(append(body, v...)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.size != int64(buf.Len()) {
		t.Fatalf("writer counted %d bytes, wrote %d", w.size, buf.Len())
	}
	r, err := goavro.NewOCFReader(&buf)
	if err != nil {
		t.Fatalf("%s: not a container file: %v", codec, err)
	}
	if got := string(r.MetaData()["tributary.topic"]); got != "t" {
		t.Errorf("metadata tributary.topic = %q", got)
	}
	i := 0
	for r.Scan() {
		v, err := r.Read()
		if err != nil {
			t.Fatalf("%s: record %d: %v", codec, i, err)
		}
		if i >= len(values) || !bytes.Equal(v.([]byte), values[i]) {
			t.Fatalf("%s: record %d differs", codec, i)
		}
		i++
	}
	if r.Err() != nil || i != len(values) {
		t.Fatalf("%s: read %d of %d records: %v", codec, i, len(values), r.Err())
	}
}

func TestOCFRoundTrip(t *testing.T) {
	// Enough data for several blocks, and the empty file.
	var values [][]byte
	for i := range 5000 {
		values = append(values, bytes.Repeat([]byte{byte(i)}, i%300))
	}
	for _, codec := range Codecs {
		checkOCF(t, codec, 0, values)
		checkOCF(t, codec, 0, nil)
	}
	// Every deflate level writes a file any reader reads: the level is
	// not recorded in it.
	for level := MinDeflateLevel; level <= MaxDeflateLevel; level++ {
		checkOCF(t, "deflate", level, values)
	}
}

func FuzzOCFRoundTrip(f *testing.F) {
	f.Add([]byte("hello"), 3, uint8(0))
	f.Add(bytes.Repeat([]byte{0}, 1000), 100, uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, n int, codec uint8) {
		if n <= 0 || n > 1000 {
			return
		}
		var values [][]byte
		for i := range n {
			values = append(values, data[:len(data)*i/n])
		}
		checkOCF(t, Codecs[int(codec)%len(Codecs)], int(codec)%(MaxDeflateLevel+1), values)
	})
}
