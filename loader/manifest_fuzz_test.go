package loader

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// goodManifest is a manifest as a run writes it.
func goodManifest() *Manifest {
	return &Manifest{
		Version: manifestVersion, Run: "20260102T030405Z-abcdef", Seq: 7,
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Committed: time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC),
		Topics: map[string]*TopicState{"events": {
			Partitions:   map[int32]*PartitionState{0: {Next: 100, Progress: 1767322800000}, 1: {Next: 0}},
			PendingHours: []string{"events/2026/01/02/03"},
		}},
		Files: []FileEntry{
			{Tmp: "_tributary/runs/20260102T030405Z-abcdef/events.p0.0-99.s1.avro", Final: "events/2026/01/02/02/events.p0.0-99.s1.avro",
				Topic: "events", Partition: 0, First: 0, Last: 99, Records: 100, Bytes: 4096, SchemaID: 1, Kind: "data"},
			{Tmp: "_tributary/runs/20260102T030405Z-abcdef/errors/events.p1.jsonl", Final: "_errors/events/2026/01/02/events.p1.0-0.jsonl",
				Topic: "events", Partition: 1, Kind: "errors"},
		},
		Markers: []string{"events/2026/01/02/02"},
		Lost:    []LostRange{{Topic: "events", Partition: 1, From: 0, To: 9, Reason: "deleted by retention before it was loaded"}},
	}
}

func manifestJSON(t testing.TB, edit func(m *Manifest)) []byte {
	m := goodManifest()
	if edit != nil {
		edit(m)
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Whatever decodeManifest accepts is safe for recovery to act on and reads
// back the same when written again; nothing makes it panic. Inputs are
// capped by readStateFile before they get here.
func FuzzDecodeManifest(f *testing.F) {
	f.Add(manifestJSON(f, nil), "20260102T030405Z-abcdef")
	f.Add(manifestJSON(f, nil), "")
	for _, bad := range manifestsRecoveryWouldMisuse {
		f.Add([]byte(bad.json), "")
	}
	f.Add([]byte(`{"version":1,"run":"r","topics":{"t":{"partitions":{"0":null}}}}`), "r")
	f.Add([]byte(`null`), "")
	f.Fuzz(func(t *testing.T, data []byte, run string) {
		m, err := decodeManifest(data, run)
		if err != nil {
			return
		}
		if m.Run == "" || strings.Contains(m.Run, "/") || m.Run == "." || m.Run == ".." || (run != "" && m.Run != run) {
			t.Fatalf("accepted run %q (file name says %q)", m.Run, run)
		}
		for _, fe := range m.Files {
			if !strings.HasPrefix(fe.Tmp, runDir(m.Run)+"/") || !inWarehouse(fe.Tmp) {
				t.Fatalf("accepted a move from %q", fe.Tmp)
			}
			if isState(fe.Final) || !inWarehouse(fe.Final) {
				t.Fatalf("accepted a move to %q", fe.Final)
			}
		}
		for topic, ts := range m.Topics {
			for p, ps := range ts.Partitions {
				if ps.Next < 0 || p < 0 {
					t.Fatalf("accepted %s/%d at %d", topic, p, ps.Next)
				}
			}
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("accepted manifest cannot be written again: %v", err)
		}
		m2, err := decodeManifest(again, run)
		if err != nil {
			t.Fatalf("accepted manifest, written again, is refused: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("manifest reads back differently:\n%+v\n%+v", m, m2)
		}
	})
}

// Manifests that parse but that recovery or the next run would have acted
// on wrongly: a partition without state made the next run panic; an empty
// or foreign run made finishing it remove _tributary/runs (every run in
// progress) or another run's directory; a file outside the run's directory
// or a destination inside _tributary let a manifest move any file of the
// warehouse.
var manifestsRecoveryWouldMisuse = []struct{ name, json string }{
	{"partition without state", `{"version":1,"run":"r","topics":{"t":{"partitions":{"0":null}}}}`},
	{"topic without state", `{"version":1,"run":"r","topics":{"t":null}}`},
	{"negative next offset", `{"version":1,"run":"r","topics":{"t":{"partitions":{"0":{"next":-1}}}}}`},
	{"no run", `{"version":1,"run":""}`},
	{"run with a slash", `{"version":1,"run":"a/b"}`},
	{"run ..", `{"version":1,"run":".."}`},
	{"no version", `{"run":"r"}`},
	{"newer version", `{"version":2,"run":"r"}`},
	{"file from outside the run", `{"version":1,"run":"r","files":[{"tmp":"events/2026/01/02/03/x.avro","final":"y.avro"}]}`},
	{"file from another run", `{"version":1,"run":"r","files":[{"tmp":"_tributary/runs/s/x.avro","final":"y.avro"}]}`},
	{"file escaping the run", `{"version":1,"run":"r","files":[{"tmp":"_tributary/runs/r/../s/x.avro","final":"y.avro"}]}`},
	{"file moved into _tributary", `{"version":1,"run":"r","files":[{"tmp":"_tributary/runs/r/x","final":"_tributary/commits/000000000001-r.json"}]}`},
	{"file moved out of the warehouse", `{"version":1,"run":"r","files":[{"tmp":"_tributary/runs/r/x","final":"../x"}]}`},
	{"marker in _tributary", `{"version":1,"run":"r","markers":["_tributary/runs"]}`},
	{"audit counts without a window", `{"version":1,"run":"r","audit":{"events":[{"topic":"t","window":0,"n":1}]}}`},
	{"negative audit count", `{"version":1,"run":"r","audit":{"window_ms":600000,"events":[{"topic":"t","window":0,"n":-5}]}}`},
	{"audit count off the window grid", `{"version":1,"run":"r","audit":{"window_ms":600000,"no_time":[{"topic":"t","window":12345,"n":1}]}}`},
	{"negative latency bucket", `{"version":1,"run":"r","audit":{"window_ms":600000,"latency":[{"topic":"t","window":0,"buckets":[1,-2]}]}}`},
}

func TestManifestRefusesWhatRecoveryWouldMisuse(t *testing.T) {
	for _, tc := range manifestsRecoveryWouldMisuse {
		if _, err := decodeManifest([]byte(tc.json), ""); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if _, err := decodeManifest(manifestJSON(t, nil), "other-run"); !errors.Is(err, errBadManifest) {
		t.Errorf("manifest under another run's name: %v, want errBadManifest", err)
	}
	m, err := decodeManifest(manifestJSON(t, nil), "20260102T030405Z-abcdef")
	if err != nil || !reflect.DeepEqual(m, goodManifest()) {
		t.Errorf("a run's manifest: %+v, %v", m, err)
	}
}
