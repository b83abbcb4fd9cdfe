package loader

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/tributary-io/tributary/loader/warehouse"
)

const fuzzAvro = `{"type":"record","name":"E","fields":[
 {"name":"header","type":{"type":"record","name":"H","fields":[{"name":"time","type":"long"},{"name":"guid","type":{"type":"fixed","name":"G","size":16}}]}},
 {"name":"tags","type":{"type":"array","items":"string"}},
 {"name":"attrs","type":{"type":"map","values":["null","double"]}},
 {"name":"u","type":["null","int","string"]}]}`

// A table's metadata, manifest list and manifest are read from the
// warehouse, where anything may have written them: whatever their bytes,
// reading the table, its state, its schema's columns, a schema change
// against it and its live files returns an error or a value, never a
// panic, and allocates within the limits (iceAvroLimits).
func FuzzIcebergTable(f *testing.F) {
	dir := f.TempDir()
	w, err := warehouse.OpenLocal(dir)
	if err != nil {
		f.Fatal(err)
	}
	root := iceRoot(w)
	s := avro.MustParse(fuzzAvro)
	fields, last, err := icebergSchema(s, nil, 0)
	if err != nil {
		f.Fatal(err)
	}
	md, err := newIceMetadata(root, "t", time.Unix(1, 0)).evolve(&TableCommit{Fields: fields, LastColumnID: last})
	if err != nil {
		f.Fatal(err)
	}
	md.Snapshots = []iceSnapshot{{SnapshotID: 5, SequenceNumber: 1, ManifestList: root + "/t/metadata/list.avro",
		Summary: map[string]string{iceStateKey: `{"partitions":{"0":{"next":10,"progress":3}}}`}}}
	md.CurrentSnapshotID = 5
	meta, _ := json.Marshal(md)
	if err := writeIceManifestList(w, "seed.avro", 5, 0, 1, []any{iceManifestSummary(root+"/t/metadata/m.avro", 10, 5, 1,
		[]iceDataFile{{path: root + "/t/data/f.s1.parquet", hour: 3, records: 1, bytes: 9, status: iceStatusAdded}})}); err != nil {
		f.Fatal(err)
	}
	list, err := os.ReadFile(filepath.Join(dir, "seed.avro"))
	if err != nil {
		f.Fatal(err)
	}
	if _, err := writeIceManifest(w, "seed-m.avro", 5, []iceDataFile{{path: root + "/t/data/f.s1.parquet", hour: 3, records: 1, bytes: 9, status: iceStatusAdded, snapshot: 5}}, nil); err != nil {
		f.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "seed-m.avro"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(meta, list, manifest)
	f.Add([]byte(`{"format-version":2,"current-snapshot-id":1,"snapshots":[{"snapshot-id":1,"summary":{"tributary.state":"{\"partitions\":{\"-1\":null}}"}}]}`), []byte("Obj\x01"), []byte{})
	f.Add([]byte(`{"format-version":2,"current-schema-id":0,"schemas":[{"schema-id":0,"fields":[{"id":1,"name":"a","type":{"type":"list","element":{"type":"map"}}}]}]}`), []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, meta, list, manifest []byte) {
		w := memFS{root: root, files: map[string][]byte{"t/metadata/v1.metadata.json": meta, "t/metadata/list.avro": list, "t/metadata/m.avro": manifest}}
		md, err := readIceTable(w, "t")
		if err != nil || md == nil {
			return
		}
		md.state()
		if cur := md.schema(); cur != nil {
			iceColumns(cur.Fields)
			if fields, last, err := icebergSchema(s, cur.Fields, md.LastColumnID); err == nil {
				md.evolve(&TableCommit{Fields: fields, LastColumnID: last})
			}
		}
		if md.current() != nil {
			iceLiveFiles(w, md)
		}
	})
}

// memFS is a read-only warehouse in memory: a local one fsyncs every file
// it writes, which would slow fuzzing down to a few inputs a second.
type memFS struct {
	root  string
	files map[string][]byte
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir
	}
	return 0
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

var errReadOnly = errors.New("read-only")

func (m memFS) Create(string) (io.WriteCloser, error) { return nil, errReadOnly }
func (m memFS) CreateExclusive(string, []byte) error  { return errReadOnly }
func (m memFS) Rename(string, string) error           { return errReadOnly }
func (m memFS) RenameNoReplace(string, string) error  { return errReadOnly }
func (m memFS) Remove(string) error                   { return errReadOnly }
func (m memFS) RemoveAll(string) error                { return errReadOnly }
func (m memFS) MkdirAll(string) error                 { return errReadOnly }
func (m memFS) String() string                        { return m.root }
func (m memFS) Close() error                          { return nil }
func (m memFS) Open(name string) (io.ReadCloser, error) {
	b, ok := m.files[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}
func (m memFS) Stat(name string) (fs.FileInfo, error) {
	if b, ok := m.files[name]; ok {
		return memInfo{name: path.Base(name), size: int64(len(b))}, nil
	}
	return nil, fs.ErrNotExist
}
func (m memFS) ReadDir(name string) ([]fs.FileInfo, error) {
	var out []fs.FileInfo
	for f, b := range m.files {
		if path.Dir(f) == name {
			out = append(out, memInfo{name: path.Base(f), size: int64(len(b))})
		}
	}
	if len(out) == 0 {
		return nil, fs.ErrNotExist
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// The offsets come from the newest snapshot in the current one's ancestry
// that records them: a snapshot another engine committed on top (no
// tributary keys) does not make a load start over, and a loop in the
// parent links ends.
func TestIcebergStateFromAncestors(t *testing.T) {
	id := func(v int64) *int64 { return &v }
	md := &iceMetadata{CurrentSnapshotID: 3, Snapshots: []iceSnapshot{
		{SnapshotID: 1, Summary: map[string]string{iceStateKey: `{"partitions":{"0":{"next":5}}}`}},
		{SnapshotID: 2, ParentSnapshotID: id(1), Summary: map[string]string{iceStateKey: `{"partitions":{"0":{"next":9}}}`}},
		{SnapshotID: 3, ParentSnapshotID: id(2), Summary: map[string]string{"operation": "replace"}},
	}}
	ts, err := md.state()
	if err != nil || ts == nil || ts.Partitions[0].Next != 9 {
		t.Fatalf("state %+v, %v; want next 9 from snapshot 2", ts, err)
	}
	md.Snapshots[0].ParentSnapshotID = id(3) // a loop, and no state in it
	md.Snapshots[0].Summary, md.Snapshots[1].Summary = nil, nil
	if ts, err := md.state(); ts != nil || err != nil {
		t.Fatalf("state %+v, %v; want none", ts, err)
	}
}
