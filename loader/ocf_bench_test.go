package loader

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hamba/avro/v2/ocf"
	"github.com/linkedin/goavro/v2"

	"github.com/tributary-io/tributary/loader/loadertest"
)

// BenchmarkOCFWriter writes the same 50,000 page views into an object
// container file three ways, per codec:
//
//		go test -run '^$' -bench BenchmarkOCFWriter -benchmem ./loader/
//
//	  - ours: the loader's ocfWriter, appending each record's Avro body as
//	    it came from Kafka;
//	  - goavro: goavro.NewOCFWriter, which takes values in native form, so
//	    the loader would first decode each body (the "decode+goavro" case;
//	    "goavro" alone is given the values decoded already, the writer's
//	    cost only);
//	  - hamba: hamba/avro's ocf.Encoder.Write, which like ours takes bodies
//	    already encoded.
//
// records/s is per core; allocs/op and B/op are per file of 50,000.
func BenchmarkOCFWriter(b *testing.B) {
	const n = 50_000
	text := loadertest.Schema(b, "pageview")
	codec, err := goavro.NewCodec(text)
	if err != nil {
		b.Fatal(err)
	}
	events := loadertest.PageViews(0, n, 1, time.Unix(1_800_000_000, 0), time.Hour)
	bodies := make([][]byte, n)
	natives := make([]any, n)
	for i, ev := range events {
		if bodies[i], err = codec.BinaryFromNative(nil, ev.Value); err != nil {
			b.Fatal(err)
		}
		if natives[i], _, err = codec.NativeFromBinary(bodies[i]); err != nil {
			b.Fatal(err)
		}
	}
	meta := map[string]string{"tributary.topic": "pageviews"}
	writers := []struct {
		name  string
		write func(b *testing.B, codecName string)
	}{
		{"ours", func(b *testing.B, c string) {
			w, err := newOCF(discard{}, text, c, 0, meta)
			if err != nil {
				b.Fatal(err)
			}
			for _, body := range bodies {
				if err := w.Append(body); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}},
		{"goavro", func(b *testing.B, c string) { goavroOCF(b, codec, c, natives, nil) }},
		{"decode+goavro", func(b *testing.B, c string) { goavroOCF(b, codec, c, nil, bodies) }},
		{"hamba", func(b *testing.B, c string) {
			e, err := ocf.NewEncoder(text, discard{}, ocf.WithCodec(ocf.CodecName(c)),
				ocf.WithBlockLength(0), ocf.WithBlockSize(blockTarget),
				ocf.WithMetadata(map[string][]byte{"tributary.topic": []byte("pageviews")}))
			if err != nil {
				b.Fatal(err)
			}
			for _, body := range bodies {
				if _, err := e.Write(body); err != nil {
					b.Fatal(err)
				}
			}
			if err := e.Close(); err != nil {
				b.Fatal(err)
			}
		}},
	}
	for _, c := range Codecs {
		for _, w := range writers {
			b.Run(c+"/"+w.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					w.write(b, c)
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// goavroOCF writes natives, or bodies decoded first, with goavro's writer,
// appending a block's worth of values at a time (it makes a block of each
// Append call).
func goavroOCF(b *testing.B, codec *goavro.Codec, c string, natives []any, bodies [][]byte) {
	w, err := goavro.NewOCFWriter(goavro.OCFConfig{W: io.Discard, Codec: codec, CompressionName: c,
		MetaData: map[string][]byte{"tributary.topic": []byte("pageviews")}})
	if err != nil {
		b.Fatal(err)
	}
	const perBlock = 2500 // about blockTarget bytes of page views
	var block []any
	for i := range max(len(natives), len(bodies)) {
		v := any(nil)
		if natives != nil {
			v = natives[i]
		} else if v, _, err = codec.NativeFromBinary(bodies[i]); err != nil {
			b.Fatal(err)
		}
		if block = append(block, v); len(block) == perBlock {
			if err := w.Append(block); err != nil {
				b.Fatal(err)
			}
			block = block[:0]
		}
	}
	if len(block) > 0 {
		if err := w.Append(block); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Close() error                { return nil }

// BenchmarkOCFDeflateLevel is what Config.DeflateLevel trades on 50,000
// page views: records/s a core against the file's size as a fraction of
// the uncompressed one (size/input).
//
//	go test -run '^$' -bench BenchmarkOCFDeflateLevel ./loader/
func BenchmarkOCFDeflateLevel(b *testing.B) {
	text := loadertest.Schema(b, "pageview")
	codec, err := goavro.NewCodec(text)
	if err != nil {
		b.Fatal(err)
	}
	events := loadertest.PageViews(0, 50_000, 1, time.Unix(1_800_000_000, 0), time.Hour)
	bodies := make([][]byte, len(events))
	var input int64
	for i, ev := range events {
		if bodies[i], err = codec.BinaryFromNative(nil, ev.Value); err != nil {
			b.Fatal(err)
		}
		input += int64(len(bodies[i]))
	}
	for _, level := range []int{1, 3, 6, 9} {
		b.Run(fmt.Sprintf("level-%d", level), func(b *testing.B) {
			var out counter
			for b.Loop() {
				out = 0
				w, err := newOCF(&out, text, "deflate", level, nil)
				if err != nil {
					b.Fatal(err)
				}
				for _, body := range bodies {
					w.Append(body)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(bodies))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(out)/float64(input), "size/input")
		})
	}
}

// counter counts the bytes written to it.
type counter int64

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }
func (c *counter) Close() error                { return nil }
