package warehouse

import (
	"testing"
	"time"
)

// A Parquet load's hour directory is Hive-style, and HourStart reads the
// hour back from it as from the Avro layout, so _SUCCESS markers follow
// both; the file names of both formats keep their offsets and schema.
func TestPartitionDir(t *testing.T) {
	h := time.Date(2026, 12, 4, 7, 0, 0, 0, time.UTC)
	dir := PartitionDir("page.views", h.Add(59*time.Minute).In(time.FixedZone("x", 5*3600)))
	if dir != "page.views/dt=2026-12-04/hr=07" {
		t.Fatalf("PartitionDir: %s", dir)
	}
	for _, d := range []string{dir, HourDir("page.views", h)} {
		if got, err := HourStart(d); err != nil || !got.Equal(h) {
			t.Errorf("HourStart(%s) = %v, %v; want %v", d, got, err, h)
		}
	}
	if _, err := HourStart("t/dt=2026-12-04/hr=24"); err == nil {
		t.Error("hr=24 parsed")
	}
	if got := ParquetFileName("t", 3, 10, 19, 7); got != "t.p3.10-19.s7.parquet" || IsDataFile(got) {
		t.Errorf("ParquetFileName %q (IsDataFile %v: the audit reads Avro files only)", got, IsDataFile(got))
	}
	if got := CompactedFileName("t", "20261204T070000Z-abcdef", 7); got != "t.compacted-20261204T070000Z-abcdef.s7.parquet" {
		t.Errorf("CompactedFileName %q", got)
	}
}
