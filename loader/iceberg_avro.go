package loader

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/ocf"
	"github.com/linkedin/goavro/v2"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// Iceberg's manifests and manifest lists are Avro container files whose
// schemas carry Iceberg's field ids (readers resolve fields by id), written
// here with goavro from the format's specification (format version 2).
// Only what a reader needs is written: no column metrics, so readers
// prune by partition (the hour) but not by column bounds.

const iceManifestEntrySchema = `{"type":"record","name":"manifest_entry","fields":[
 {"name":"status","type":"int","field-id":0},
 {"name":"snapshot_id","type":["null","long"],"default":null,"field-id":1},
 {"name":"sequence_number","type":["null","long"],"default":null,"field-id":3},
 {"name":"file_sequence_number","type":["null","long"],"default":null,"field-id":4},
 {"name":"data_file","field-id":2,"type":{"type":"record","name":"r2","fields":[
  {"name":"content","type":"int","field-id":134},
  {"name":"file_path","type":"string","field-id":100},
  {"name":"file_format","type":"string","field-id":101},
  {"name":"partition","field-id":102,"type":{"type":"record","name":"r102","fields":[
   {"name":"` + eventTimeColumn + `_hour","type":["null","int"],"default":null,"field-id":1000}]}},
  {"name":"record_count","type":"long","field-id":103},
  {"name":"file_size_in_bytes","type":"long","field-id":104}]}}]}`

const iceManifestFileSchema = `{"type":"record","name":"manifest_file","fields":[
 {"name":"manifest_path","type":"string","field-id":500},
 {"name":"manifest_length","type":"long","field-id":501},
 {"name":"partition_spec_id","type":"int","field-id":502},
 {"name":"content","type":"int","field-id":517},
 {"name":"sequence_number","type":"long","field-id":515},
 {"name":"min_sequence_number","type":"long","field-id":516},
 {"name":"added_snapshot_id","type":"long","field-id":503},
 {"name":"added_files_count","type":"int","field-id":504},
 {"name":"existing_files_count","type":"int","field-id":505},
 {"name":"deleted_files_count","type":"int","field-id":506},
 {"name":"added_rows_count","type":"long","field-id":512},
 {"name":"existing_rows_count","type":"long","field-id":513},
 {"name":"deleted_rows_count","type":"long","field-id":514},
 {"name":"partitions","default":null,"field-id":507,"type":["null",{"type":"array","element-id":508,"items":{"type":"record","name":"r508","fields":[
  {"name":"contains_null","type":"boolean","field-id":509},
  {"name":"contains_nan","type":["null","boolean"],"default":null,"field-id":518},
  {"name":"lower_bound","type":["null","bytes"],"default":null,"field-id":510},
  {"name":"upper_bound","type":["null","bytes"],"default":null,"field-id":511}]}}]}]}`

// Manifest entry status and content values of the specification.
const (
	iceStatusExisting = 0
	iceStatusAdded    = 1
	iceStatusDeleted  = 2
)

var (
	iceEntryCodec = must(goavro.NewCodec(iceManifestEntrySchema))
	iceListCodec  = must(goavro.NewCodec(iceManifestFileSchema))
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// iceDataFile is a data file as a manifest lists it.
type iceDataFile struct {
	path    string // absolute URI
	hour    int32  // hours since the epoch: the partition
	records int64
	bytes   int64
	status  int
	// snapshot that added it: for existing or deleted entries of a
	// rewrite, the original one.
	snapshot int64
	seq      int64 // for existing and deleted entries: their data sequence number
}

// writeIceManifest writes a manifest of files to name and returns its
// length.
func writeIceManifest(w warehouse.FS, name string, snapshot int64, files []iceDataFile, meta map[string]string) (int64, error) {
	var buf bytes.Buffer
	md := map[string][]byte{}
	for k, v := range meta {
		md[k] = []byte(v)
	}
	ow, err := goavro.NewOCFWriter(goavro.OCFConfig{W: &buf, Codec: iceEntryCodec, CompressionName: goavro.CompressionDeflateLabel, MetaData: md})
	if err != nil {
		return 0, err
	}
	recs := make([]any, 0, len(files))
	for _, f := range files {
		e := map[string]any{
			"status":      int32(f.status),
			"snapshot_id": goavro.Union("long", f.snapshot),
			"data_file": map[string]any{
				"content":            int32(0),
				"file_path":          f.path,
				"file_format":        "PARQUET",
				"partition":          map[string]any{eventTimeColumn + "_hour": goavro.Union("int", f.hour)},
				"record_count":       f.records,
				"file_size_in_bytes": f.bytes,
			},
		}
		if f.status != iceStatusAdded {
			// Added entries inherit their sequence numbers from the
			// manifest list; others keep the ones they were added with.
			e["sequence_number"] = goavro.Union("long", f.seq)
			e["file_sequence_number"] = goavro.Union("long", f.seq)
		}
		recs = append(recs, e)
	}
	if len(recs) > 0 {
		if err := ow.Append(recs); err != nil {
			return 0, fmt.Errorf("manifest %s: %w", name, err)
		}
	}
	return int64(buf.Len()), warehouse.WriteFile(w, name, buf.Bytes())
}

// iceHourBound is a partition bound as Iceberg serializes an int: 4 bytes,
// little-endian.
func iceHourBound(h int32) []byte {
	return binary.LittleEndian.AppendUint32(nil, uint32(h))
}

// iceManifestSummary is a manifest's entry in a manifest list.
func iceManifestSummary(path string, length int64, snapshot, seq int64, files []iceDataFile) map[string]any {
	var added, existing, deleted int32
	var addedRows, existingRows, deletedRows int64
	lo, hi := int32(0), int32(0)
	for i, f := range files {
		switch f.status {
		case iceStatusAdded:
			added++
			addedRows += f.records
		case iceStatusExisting:
			existing++
			existingRows += f.records
		default:
			deleted++
			deletedRows += f.records
		}
		if i == 0 || f.hour < lo {
			lo = f.hour
		}
		if i == 0 || f.hour > hi {
			hi = f.hour
		}
	}
	summary := map[string]any{"contains_null": false}
	if len(files) > 0 {
		summary["lower_bound"] = goavro.Union("bytes", iceHourBound(lo))
		summary["upper_bound"] = goavro.Union("bytes", iceHourBound(hi))
	}
	return map[string]any{
		"manifest_path": path, "manifest_length": length, "partition_spec_id": int32(0), "content": int32(0),
		"sequence_number": seq, "min_sequence_number": seq, "added_snapshot_id": snapshot,
		"added_files_count": added, "existing_files_count": existing, "deleted_files_count": deleted,
		"added_rows_count": addedRows, "existing_rows_count": existingRows, "deleted_rows_count": deletedRows,
		"partitions": goavro.Union("array", []any{summary}),
	}
}

// writeIceManifestList writes a snapshot's manifest list.
func writeIceManifestList(w warehouse.FS, name string, snapshot, parent, seq int64, entries []any) error {
	var buf bytes.Buffer
	parentText := "null"
	if parent != 0 {
		parentText = strconv.FormatInt(parent, 10)
	}
	ow, err := goavro.NewOCFWriter(goavro.OCFConfig{W: &buf, Codec: iceListCodec, CompressionName: goavro.CompressionDeflateLabel,
		MetaData: map[string][]byte{
			"snapshot-id":        []byte(strconv.FormatInt(snapshot, 10)),
			"parent-snapshot-id": []byte(parentText),
			"sequence-number":    []byte(strconv.FormatInt(seq, 10)),
			"format-version":     []byte("2"),
		}})
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		if err := ow.Append(entries); err != nil {
			return fmt.Errorf("manifest list %s: %w", name, err)
		}
	}
	return warehouse.WriteFile(w, name, buf.Bytes())
}

// maxIceMetaFile bounds what is read of a manifest list, manifest or
// metadata file, so that a damaged one cannot exhaust memory.
const maxIceMetaFile = 256 << 20

// maxIceEntries bounds the records read from one manifest list or
// manifest: a record of a hostile file's schema may take no bytes at all.
// Iceberg's writers roll manifests at 8 MiB, some 100,000 entries.
const maxIceEntries = 1 << 20

// readIceAvro reads every record of a manifest list or manifest; each must
// be a record holding key (manifest_path, data_file).
func readIceAvro(w warehouse.FS, name, key string) ([]any, error) {
	r, err := w.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxIceMetaFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading %s: %w", w, name, err)
	}
	if len(data) > maxIceMetaFile {
		return nil, fmt.Errorf("%s: %s is larger than %d bytes", w, name, maxIceMetaFile)
	}
	if err := checkIceAvro(data); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", w, name, err)
	}
	or, err := goavro.NewOCFReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", w, name, err)
	}
	var out []any
	for or.Scan() {
		v, err := or.Read()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", w, name, err)
		}
		if m, ok := v.(map[string]any); !ok || m[key] == nil {
			return nil, fmt.Errorf("%s: %s: record %d has no %s: not an Iceberg manifest or manifest list", w, name, len(out), key)
		}
		if len(out) == maxIceEntries {
			return nil, fmt.Errorf("%s: %s holds more than %d entries", w, name, maxIceEntries)
		}
		out = append(out, v)
	}
	return out, or.Err()
}

// iceAvroLimits bound what decoding a manifest or manifest list may
// allocate. goavro allocates whatever a length or count in the file
// claims (up to 2 GiB a byte string, 2^31 items an array), so a damaged
// file could take the process's memory: hamba/avro, which takes limits,
// reads the file first, and goavro only files hamba read within them. An
// entry of a manifest holds at most a few maps of one item per column.
var iceAvroLimits = avro.Config{MaxByteSliceSize: 16 << 20, MaxSliceAllocSize: 1 << 16}.Freeze()

// checkIceAvro reads a whole container file within iceAvroLimits and
// maxIceEntries records.
func checkIceAvro(data []byte) error {
	dec, err := ocf.NewDecoder(bytes.NewReader(data), ocf.WithDecoderConfig(iceAvroLimits))
	if err != nil {
		return err
	}
	defer dec.Close()
	n := 0
	for dec.HasNext() {
		if n++; n > maxIceEntries {
			return fmt.Errorf("more than %d entries", maxIceEntries)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
	}
	return dec.Error()
}
