package loader

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// An Iceberg table in the file-system (Hadoop) catalog layout:
//
//	<table>/metadata/vN.metadata.json   the table's versions; the highest is current
//	<table>/metadata/version-hint.text  N, for readers that look there first
//	<table>/metadata/snap-<id>-<run>.avro, <run>-m0.avro   manifest lists, manifests
//	<table>/data/dt=YYYY-MM-DD/hr=HH/   data files (Iceberg's paths are in the manifests;
//	                                    the directories are for people)
//
// The commit point of a version is the rename that makes
// vN+1.metadata.json appear, whole, after checking that it does not
// exist: Tributary's writers of a table hold its topic's lock, so no other
// one can take the name between the check and the rename. A version file
// is never overwritten.

const (
	iceMetadataDir = "metadata"
	iceHintName    = "version-hint.text"
)

// Snapshot summary keys the loader writes and reads back.
const (
	iceRunKey     = "tributary.run"
	iceOffsetsKey = "tributary.offsets" // {"partition": next offset, ...}: where the table stands
	iceFromKey    = "tributary.from"    // {"partition": first offset}: where this snapshot's range began
	iceStateKey   = "tributary.state"   // the topic's TopicState, as a loader manifest holds it
	iceHoursKey   = "tributary.hours-complete"
)

// iceHourTagPrefix names the tag of a completed hour: hour-YYYY-MM-DD-HH.
const iceHourTagPrefix = "hour-"

type iceMetadata struct {
	FormatVersion      int               `json:"format-version"`
	TableUUID          string            `json:"table-uuid"`
	Location           string            `json:"location"`
	LastSequenceNumber int64             `json:"last-sequence-number"`
	LastUpdatedMs      int64             `json:"last-updated-ms"`
	LastColumnID       int               `json:"last-column-id"`
	CurrentSchemaID    int               `json:"current-schema-id"`
	Schemas            []iceSchema       `json:"schemas"`
	DefaultSpecID      int               `json:"default-spec-id"`
	PartitionSpecs     []json.RawMessage `json:"partition-specs"`
	LastPartitionID    int               `json:"last-partition-id"`
	DefaultSortOrderID int               `json:"default-sort-order-id"`
	SortOrders         []json.RawMessage `json:"sort-orders"`
	Properties         map[string]string `json:"properties"`
	CurrentSnapshotID  int64             `json:"current-snapshot-id"`
	Snapshots          []iceSnapshot     `json:"snapshots"`
	SnapshotLog        []iceLogEntry     `json:"snapshot-log"`
	MetadataLog        []iceLogEntry     `json:"metadata-log"`
	Refs               map[string]iceRef `json:"refs"`
	Statistics         []json.RawMessage `json:"statistics,omitempty"`
	version            int               // N of vN.metadata.json
	file               string            // its warehouse path
}

type iceSnapshot struct {
	SnapshotID       int64             `json:"snapshot-id"`
	ParentSnapshotID *int64            `json:"parent-snapshot-id,omitempty"`
	SequenceNumber   int64             `json:"sequence-number"`
	TimestampMs      int64             `json:"timestamp-ms"`
	ManifestList     string            `json:"manifest-list"`
	Summary          map[string]string `json:"summary"`
	SchemaID         *int              `json:"schema-id,omitempty"`
}

type iceLogEntry struct {
	TimestampMs  int64  `json:"timestamp-ms"`
	SnapshotID   int64  `json:"snapshot-id,omitempty"`
	MetadataFile string `json:"metadata-file,omitempty"`
}

type iceRef struct {
	SnapshotID int64  `json:"snapshot-id"`
	Type       string `json:"type"`
}

var iceVersionName = regexp.MustCompile(`^v([0-9]+)\.metadata\.json$`)

// readIceTable returns a table's current metadata, or nil if dir holds no
// table yet. The current version is the highest vN.metadata.json, found
// by listing: the version hint may lag behind it.
func readIceTable(w warehouse.FS, dir string) (*iceMetadata, error) {
	infos, err := w.ReadDir(path.Join(dir, iceMetadataDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: listing its metadata: %w", dir, err)
	}
	best := 0
	for _, fi := range infos {
		if m := iceVersionName.FindStringSubmatch(fi.Name()); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n > best {
				best = n
			}
		}
	}
	if best == 0 {
		return nil, nil
	}
	name := path.Join(dir, iceMetadataDir, fmt.Sprintf("v%d.metadata.json", best))
	data, err := readStateFile(w, name)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", dir, err)
	}
	md := &iceMetadata{}
	if err := json.Unmarshal(data, md); err != nil {
		return nil, fmt.Errorf("table %s: %s: %w", dir, name, err)
	}
	if md.FormatVersion != 2 {
		return nil, fmt.Errorf("table %s: %s has format version %d; the loader writes version 2 tables", dir, name, md.FormatVersion)
	}
	md.version, md.file = best, name
	return md, nil
}

func (md *iceMetadata) current() *iceSnapshot {
	if md == nil {
		return nil
	}
	for i := range md.Snapshots {
		if md.Snapshots[i].SnapshotID == md.CurrentSnapshotID {
			return &md.Snapshots[i]
		}
	}
	return nil
}

func (md *iceMetadata) schema() *iceSchema {
	if md == nil {
		return nil
	}
	for i := range md.Schemas {
		if md.Schemas[i].SchemaID == md.CurrentSchemaID {
			return &md.Schemas[i]
		}
	}
	return nil
}

// snapshotOf returns the snapshot a run committed, if any.
func (md *iceMetadata) snapshotOf(run string) *iceSnapshot {
	if md == nil {
		return nil
	}
	for i := range md.Snapshots {
		if md.Snapshots[i].Summary[iceRunKey] == run {
			return &md.Snapshots[i]
		}
	}
	return nil
}

// state is the topic's state as the table's snapshots record it: that of
// the newest snapshot in the current one's ancestry that has one, so that
// a snapshot another engine committed (a rewrite, an expiry, an append)
// does not make the loader forget its offsets and load them again. It is
// nil when no ancestor has one: a new table.
func (md *iceMetadata) state() (*TopicState, error) {
	if md == nil {
		return nil, nil
	}
	byID := map[int64]*iceSnapshot{}
	for i := range md.Snapshots {
		byID[md.Snapshots[i].SnapshotID] = &md.Snapshots[i]
	}
	s := md.current()
	for steps := 0; s != nil && steps <= len(md.Snapshots); steps++ {
		if text := s.Summary[iceStateKey]; text != "" {
			var ts TopicState
			if err := json.Unmarshal([]byte(text), &ts); err != nil {
				return nil, fmt.Errorf("snapshot %d: %s: %w", s.SnapshotID, iceStateKey, err)
			}
			for p, ps := range ts.Partitions {
				if ps == nil || p < 0 || ps.Next < 0 {
					return nil, fmt.Errorf("snapshot %d: %s: partition %d: %+v", s.SnapshotID, iceStateKey, p, ps)
				}
			}
			return &ts, nil
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = byID[*s.ParentSnapshotID]
	}
	return nil, nil
}

// TableCommit is what a run commits to one topic's Iceberg table, kept in
// its manifest so that recovery can finish the commit of a run cut short
// between the commits of two tables.
type TableCommit struct {
	// Dir is the table's directory in the warehouse.
	Dir string `json:"dir"`
	// Base is the table's current snapshot when the run began (0: none):
	// the commit is refused if the table moved meanwhile.
	Base int64 `json:"base"`
	// Snapshot is the id of the snapshot the run commits.
	Snapshot int64 `json:"snapshot"`
	// SchemaID is the registry's id of the table's Avro schema; Fields and
	// LastColumnID are its Iceberg schema.
	SchemaID     int        `json:"schema_id"`
	Fields       []iceField `json:"fields"`
	LastColumnID int        `json:"last_column_id"`
	// From is each loaded partition's first offset in this run.
	From map[int32]int64 `json:"from"`
	// Catalog is the REST catalog's URI the table is committed through;
	// empty: the file-system catalog. Recovery must look for the run's
	// snapshot where the run committed it.
	Catalog string `json:"catalog,omitempty"`
}

func newSnapshotID() int64 {
	var b [8]byte
	rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) >> 1)
}

// iceRoot is the warehouse's URI, to which table paths are relative:
// Iceberg's metadata holds absolute paths.
func iceRoot(w warehouse.FS) string { return strings.TrimSuffix(w.String(), "/") }

// tableHour is the data directory of a table's hour.
func tableHour(dir string, hour time.Time) string {
	return path.Join(dir, "data", hour.UTC().Format("dt=2006-01-02/hr=15"))
}

// iceSpecFields is the table's partition spec, hour(_event_time), given
// the event time column's id.
func iceSpecFields(fields []iceField) string {
	src := 0
	for _, f := range fields {
		if f.Name == eventTimeColumn {
			src = f.ID
		}
	}
	return fmt.Sprintf(`[{"name":"%s_hour","transform":"hour","source-id":%d,"field-id":%d}]`, eventTimeColumn, src, icePartitionField)
}

func newIceMetadata(root, dir string, now time.Time) *iceMetadata {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	id := fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
	return &iceMetadata{FormatVersion: 2, TableUUID: id, Location: root + "/" + dir, LastUpdatedMs: now.UnixMilli(),
		CurrentSchemaID: -1, LastPartitionID: 999, CurrentSnapshotID: -1,
		SortOrders: []json.RawMessage{json.RawMessage(`{"order-id":0,"fields":[]}`)},
		Properties: map[string]string{"write.format.default": "parquet"}, Refs: map[string]iceRef{}}
}

// evolve returns a copy of md whose current schema is tc's, added as a new
// schema when it differs from the current one, with the name mapping
// extended and the partition spec set up on a new table.
func (md *iceMetadata) evolve(tc *TableCommit) (*iceMetadata, error) {
	next := md.clone()
	cur := md.schema()
	same := false
	if cur != nil {
		a, _ := json.Marshal(cur.Fields)
		b, _ := json.Marshal(tc.Fields)
		var x, y any
		json.Unmarshal(a, &x)
		json.Unmarshal(b, &y)
		same = reflect.DeepEqual(x, y)
	}
	if !same {
		id := 0
		for _, s := range md.Schemas {
			id = max(id, s.SchemaID+1)
		}
		next.Schemas = append(next.Schemas, iceSchema{Type: "struct", SchemaID: id, Fields: tc.Fields})
		next.CurrentSchemaID = id
		next.LastColumnID = max(md.LastColumnID, tc.LastColumnID)
		var old []nameMapping
		if text := md.Properties["schema.name-mapping.default"]; text != "" {
			if err := json.Unmarshal([]byte(text), &old); err != nil {
				return nil, fmt.Errorf("property schema.name-mapping.default: %w", err)
			}
		}
		mapping, _ := json.Marshal(mergeNameMapping(old, iceNameMapping(tc.Fields)))
		next.Properties["schema.name-mapping.default"] = string(mapping)
	}
	if len(md.PartitionSpecs) == 0 {
		spec := `{"spec-id":0,"fields":` + iceSpecFields(tc.Fields) + `}`
		next.PartitionSpecs = []json.RawMessage{json.RawMessage(spec)}
		next.LastPartitionID = icePartitionField
	}
	return next, nil
}

// clone copies md deeply enough to change its lists and maps.
func (md *iceMetadata) clone() *iceMetadata {
	next := *md
	next.Schemas = slices.Clone(md.Schemas)
	next.Snapshots = slices.Clone(md.Snapshots)
	next.SnapshotLog = slices.Clone(md.SnapshotLog)
	next.MetadataLog = slices.Clone(md.MetadataLog)
	next.Properties = maps.Clone(md.Properties)
	if next.Properties == nil {
		next.Properties = map[string]string{}
	}
	next.Refs = maps.Clone(md.Refs)
	if next.Refs == nil {
		next.Refs = map[string]iceRef{}
	}
	return &next
}

// TableDataFiles lists the data files of the current snapshot of the
// table in directory dir (warehouse paths, with the hour each holds) of
// the file-system catalog, for the audit's warehouse scan
// (audit.WarehouseScanConfig.TableFiles). A directory holding no table has
// none.
func TableDataFiles(w warehouse.FS, dir string) ([]audit.TableFile, error) {
	return TableDataFilesIn(CatalogConfig{})(w, dir)
}

// TableDataFilesIn is TableDataFiles for the tables of catalog c.
func TableDataFilesIn(c CatalogConfig) func(w warehouse.FS, dir string) ([]audit.TableFile, error) {
	return func(w warehouse.FS, dir string) ([]audit.TableFile, error) {
		cat, err := c.open(warehouse.NewBatch(w))
		if err != nil {
			return nil, err
		}
		md, err := cat.load(dir)
		if err != nil {
			return nil, err
		}
		return tableDataFiles(w, dir, md)
	}
}

func tableDataFiles(w warehouse.FS, dir string, md *iceMetadata) ([]audit.TableFile, error) {
	live, err := iceLiveFiles(w, md)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", dir, err)
	}
	root := iceRoot(w) + "/"
	out := make([]audit.TableFile, 0, len(live))
	for _, f := range live {
		out = append(out, audit.TableFile{Path: strings.TrimPrefix(f.path, root), Hour: time.Unix(int64(f.hour)*3600, 0).UTC()})
	}
	return out, nil
}
