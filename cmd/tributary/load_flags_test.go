package main_test

import (
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testenv"
)

// A load flag out of its range is refused before the run reaches any
// service, with a message naming the flag and what it accepts.
func TestLoadRefusesBadDeflateLevel(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	for _, level := range []string{"0", "10", "-3"} {
		stderr := testenv.RunStderr(t, 1, "load", "--brokers", "127.0.0.1:1", "--topics", "pageviews", "--deflate-level", level)
		want := "--deflate-level: deflate level " + level + ": use 1 (fastest) to 9 (smallest)"
		if !strings.Contains(stderr, want) {
			t.Errorf("--deflate-level %s: stderr %q, want it to say %q", level, stderr, want)
		}
	}
}

// A deflate level given with another codec would be ignored: it is
// refused, unless it is the default (a flag left as it was).
func TestLoadRefusesDeflateLevelWithOtherCodec(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	for _, codec := range []string{"snappy", "null"} {
		stderr := testenv.RunStderr(t, 1, "load", "--brokers", "127.0.0.1:1", "--topics", "pageviews", "--codec", codec, "--deflate-level", "9")
		want := "--deflate-level: deflate level 9 applies to the deflate codec only, and the codec is " + codec
		if !strings.Contains(stderr, want) {
			t.Errorf("--codec %s --deflate-level 9: stderr %q, want it to say %q", codec, stderr, want)
		}
	}
}

// HDFS flags that cannot work are refused before the run reaches any
// service.
func TestLoadRefusesBadHDFSFlags(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--hdfs-data-transfer-protection", "secret"}, `--hdfs-data-transfer-protection: data transfer protection "secret": want one of authentication, integrity, privacy`},
		{[]string{"--hdfs-keytab", "etl.keytab"}, "--hdfs-keytab needs --hdfs-principal"},
	} {
		stderr := testenv.RunStderr(t, 1, append([]string{"load", "--brokers", "127.0.0.1:1", "--topics", "pageviews", "--warehouse", "hdfs://127.0.0.1:1/w"}, c.args...)...)
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%v: stderr %q, want it to say %q", c.args, stderr, c.want)
		}
	}
}

// load and audit count take the HDFS flags to their warehouse: a Hadoop
// configuration directory that does not exist is named in the error.
func TestHDFSFlagsReachTheWarehouse(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	missing := t.TempDir() + "/no-such-conf"
	want := "the Hadoop configuration directory: stat " + missing + ": no such file or directory"
	for _, args := range [][]string{
		{"load", "--brokers", "127.0.0.1:1", "--topics", "pageviews"},
		{"audit", "count", "--brokers", "127.0.0.1:1", "--tier", "warehouse", "--dry-run"},
	} {
		args = append(args, "--warehouse", "hdfs://prod-ns/warehouse", "--hadoop-conf", missing)
		if stderr := testenv.RunStderr(t, 1, args...); !strings.Contains(stderr, want) {
			t.Errorf("%v: stderr %q, want it to say %q", args, stderr, want)
		}
	}
}

// --complete-by audit certifies hours by the audit's counts, which a run
// without --audit does not make: refused, saying why; so are an unknown
// way to complete hours and a threshold that is no percentage.
func TestLoadRefusesCompleteByAuditWithoutAudit(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	for args, want := range map[string]string{
		"--complete-by audit":              "complete by audit needs the run to count for the audit (--audit)",
		"--complete-by audited":            `complete by "audited": use progress or audit`,
		"--audit --complete-threshold 120": "complete threshold 120: a percentage, above 0 and at most 100",
	} {
		stderr := testenv.RunStderr(t, 1, append([]string{"load", "--brokers", "127.0.0.1:1", "--warehouse", "file://" + t.TempDir(), "--topics", "pageviews"}, strings.Fields(args)...)...)
		if !strings.Contains(stderr, want) {
			t.Errorf("%s: stderr %q, want it to say %q", args, stderr, want)
		}
	}
}

// Each format has its own codecs, and a deflate level means nothing to
// Parquet: a mismatch is refused with the codecs the format takes.
func TestLoadRefusesCodecOfOtherFormat(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "parquet", "--codec", "deflate"}, `--format, --codec: codec "deflate": Parquet files take one of [snappy zstd gzip none]`},
		{[]string{"--codec", "zstd"}, `--format, --codec: codec "zstd": Avro files take one of [null deflate snappy]`},
		{[]string{"--format", "orc"}, `--format, --codec: format "orc": use one of [avro parquet]`},
		{[]string{"--format", "parquet", "--deflate-level", "9"}, "--deflate-level: applies to --format avro only"},
	} {
		args := append([]string{"load", "--brokers", "127.0.0.1:1", "--topics", "pageviews"}, c.args...)
		if stderr := testenv.RunStderr(t, 1, args...); !strings.Contains(stderr, c.want) {
			t.Errorf("%v: stderr %q, want it to say %q", c.args, stderr, c.want)
		}
	}
}
