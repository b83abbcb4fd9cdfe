package audit

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// countParquetFile counts the events of one Parquet file of a Parquet
// load (loader's --format parquet). Only the header's columns are read,
// a row group at a time, so memory stays within a row group's header
// values whatever the file's size. The header is the top-level group
// field (the loader keeps the Avro field names); its time column is
// milliseconds (a plain INT64, as Avro's long) or a TIMESTAMP in any
// unit. A row whose header or time is null counts as no_time in its
// hour's window, as in Avro files.
func countParquetFile(w warehouse.FS, name, topic string, hour time.Time, window time.Duration, field string, c *Counts, dc *distinctCounter) error {
	f, err := w.Open(name)
	if err != nil {
		return fmt.Errorf("audit: open %s: %w", name, err)
	}
	defer f.Close()
	st, err := w.Stat(name)
	if err != nil {
		return fmt.Errorf("audit: %s: %w", name, err)
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		b, err := io.ReadAll(f)
		if err != nil {
			return fmt.Errorf("audit: read %s: %w", name, err)
		}
		ra = bytes.NewReader(b)
	}
	pf, err := parquet.OpenFile(ra, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("audit: %s is not a Parquet file: %w", name, err)
	}
	noTime := TopicWindow{Topic: topic, Window: WindowStart(hour, window)}
	if field == "" {
		field = "header"
	}
	timeCol, ok := pf.Schema().Lookup(field, "time")
	if !ok || timeCol.MaxRepetitionLevel > 0 {
		c.NoTime[noTime] += pf.NumRows()
		return nil
	}
	scale, err := millisPer(timeCol.Node)
	if err != nil {
		return fmt.Errorf("audit: %s: column %s.time: %w", name, field, err)
	}
	serverCol, hasServer := pf.Schema().Lookup(field, "server")
	// Every leaf of the header identifies the event (time, server,
	// service, guid): copies of one event have equal headers.
	var idCols []int
	for _, path := range pf.Schema().Columns() {
		if len(path) == 2 && path[0] == field {
			if l, ok := pf.Schema().Lookup(path...); ok && l.MaxRepetitionLevel == 0 {
				idCols = append(idCols, l.ColumnIndex)
			}
		}
	}
	for _, rg := range pf.RowGroups() {
		cols := map[int][]parquet.Value{}
		for _, ci := range append(slices.Clone(idCols), timeCol.ColumnIndex, serverCol.ColumnIndex) {
			if _, done := cols[ci]; done || (ci == serverCol.ColumnIndex && !hasServer) {
				continue
			}
			if cols[ci], err = readColumn(rg, ci); err != nil {
				return fmt.Errorf("audit: %s: %w", name, err)
			}
		}
		times := cols[timeCol.ColumnIndex]
		for i, tv := range times {
			if tv.IsNull() {
				c.NoTime[noTime]++
				continue
			}
			server := ""
			if hasServer && i < len(cols[serverCol.ColumnIndex]) && !cols[serverCol.ColumnIndex][i].IsNull() {
				server = string(cols[serverCol.ColumnIndex][i].ByteArray())
			}
			k := Key{Topic: topic, Window: WindowStart(time.UnixMilli(scale(tv.Int64())), window), Server: server}
			c.Events[k]++
			h := sha256.New()
			for _, ci := range idCols {
				if i < len(cols[ci]) {
					h.Write(cols[ci][i].AppendBytes(nil))
					h.Write([]byte{0})
				}
			}
			dc.add(k, [16]byte(h.Sum(nil)[:16]))
		}
	}
	return nil
}

// millisPer returns how a time column's values become milliseconds.
func millisPer(n parquet.Node) (func(int64) int64, error) {
	if n.Type().Kind() != parquet.Int64 {
		return nil, errors.New("not an INT64 column")
	}
	// A TIMESTAMP counts in its unit; a plain INT64 is milliseconds, as
	// Avro's long header time.
	if lt := n.Type().LogicalType(); lt != nil {
		if ts, ok := lt.Value.(*format.TimestampType); ok && ts.Unit.Value != nil {
			per := int64(time.Millisecond / ts.Unit.Value.Duration())
			if per > 1 {
				return func(v int64) int64 { return v / per }, nil
			}
		}
	}
	return func(v int64) int64 { return v }, nil
}

// readColumn reads the values of one (non-repeated) column of a row
// group, one per row.
func readColumn(rg parquet.RowGroup, col int) ([]parquet.Value, error) {
	pages := rg.ColumnChunks()[col].Pages()
	defer pages.Close()
	out := make([]parquet.Value, 0, rg.NumRows())
	for {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", col, err)
		}
		buf := make([]parquet.Value, p.NumValues())
		n, err := p.Values().ReadValues(buf)
		if err != nil && !errors.Is(err, io.EOF) {
			parquet.Release(p)
			return nil, fmt.Errorf("column %d: %w", col, err)
		}
		for _, v := range buf[:n] {
			out = append(out, v.Clone())
		}
		parquet.Release(p)
	}
}
