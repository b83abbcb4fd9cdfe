package compat_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestKcat drives the broker with Debian's kcat (librdkafka): produce with
// idempotence and compression, then consume from the beginning.
func TestKcat(t *testing.T) {
	testenv.Needs(t, testenv.Kcat)
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is missing: run scripts/install-deps.sh (.ci/run does)")
	}
	b := testenv.StartBroker(t)
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			topic := "kcat-" + codec
			var lines []string
			for i := range 500 {
				lines = append(lines, fmt.Sprintf("%s line %d", codec, i))
			}
			in := strings.Join(lines, "\n") + "\n"
			produce := exec.Command(kcat, "-b", b.Addr, "-t", topic, "-P",
				"-X", "enable.idempotence=true", "-X", "compression.codec="+codec)
			produce.Stdin = strings.NewReader(in)
			if out, err := produce.CombinedOutput(); err != nil {
				t.Fatalf("kcat -P: %v\n%s", err, out)
			}
			consume := exec.Command(kcat, "-b", b.Addr, "-t", topic, "-C", "-o", "beginning", "-e", "-q")
			out, err := consume.Output()
			if err != nil {
				t.Fatalf("kcat -C: %v\n%s", err, out)
			}
			if string(out) != in {
				t.Fatalf("kcat read back %d bytes, want %d:\n%.300s", len(out), len(in), out)
			}
		})
	}
}
