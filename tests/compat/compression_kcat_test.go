package compat_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestTopicCompressionRecompressesOnAppend: a topic whose compression.type
// names a codec stores every batch in it, whatever the producer sent, and
// franz-go and kcat (librdkafka) read the records back unchanged.
func TestTopicCompressionRecompressesOnAppend(t *testing.T) {
	testenv.Needs(t, testenv.Kcat)
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is missing: run scripts/install-deps.sh (.ci/run does)")
	}
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir))
	adm, _ := brokertest.NewAdmin(t, b.Addr)
	for _, tc := range []struct {
		topicCodec string
		sent       kgo.CompressionCodec
	}{
		{"gzip", kgo.NoCompression()},
		{"zstd", kgo.NoCompression()},
		{"snappy", kgo.GzipCompression()},
		{"lz4", kgo.ZstdCompression()},
		{"uncompressed", kgo.Lz4Compression()},
	} {
		t.Run(tc.topicCodec, func(t *testing.T) {
			topic := "stored-" + tc.topicCodec
			brokertest.CreateTopic(t, b.Addr, topic, 1, map[string]*string{"compression.type": kmsg.StringPtr(tc.topicCodec)})
			want := brokertest.ProduceBatches(t, b.Addr, topic, 300, tc.sent)

			codecs := brokertest.StoredCodecs(t, dir, topic)
			if len(codecs) < 2 {
				t.Fatalf("%d batches stored, want several", len(codecs))
			}
			for i, c := range codecs {
				if c != brokertest.CodecNumbers[tc.topicCodec] {
					t.Fatalf("batch %d stored with codec %d, want %s (%d)", i, c, tc.topicCodec, brokertest.CodecNumbers[tc.topicCodec])
				}
			}

			got := brokertest.ConsumeAll(t, b.Addr, topic, len(want))[0]
			for i, r := range got {
				if r.Offset != int64(i) || string(r.Value) != want[i] {
					t.Fatalf("kgo: offset %d holds %q at %d, want %q", i, r.Value, r.Offset, want[i])
				}
			}
			out, err := exec.Command(kcat, "-b", b.Addr, "-t", topic, "-C", "-o", "beginning", "-e", "-q").Output()
			if err != nil {
				t.Fatalf("kcat -C: %v\n%s", err, out)
			}
			if string(out) != strings.Join(want, "\n")+"\n" {
				t.Fatalf("kcat read back %d bytes, want the %d records:\n%.300s", len(out), len(want), out)
			}

			rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
			if err != nil {
				t.Fatal(err)
			}
			if c := brokertest.ConfigsByName(t, rcs, topic)["compression.type"]; c.MaybeValue() != tc.topicCodec || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
				t.Errorf("DescribeConfigs: compression.type=%s from %v, want %s from the topic", c.MaybeValue(), c.Source, tc.topicCodec)
			}
		})
	}
}
