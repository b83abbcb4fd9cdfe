package loader_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/schema"
)

// pyarrowRead reads dir (a topic's directory) with pyarrow's dataset API
// and Hive partitioning, through loader/testdata/read_parquet.py.
type pyarrowTable struct {
	Files int               `json:"files"`
	Types map[string]string `json:"types"`
	Rows  []map[string]any  `json:"rows"`
}

func pyarrowRead(t *testing.T, dir string) pyarrowTable {
	t.Helper()
	if exec.Command("python3", "-c", "import pyarrow.dataset").Run() != nil {
		t.Fatal("pyarrow is missing: run scripts/install-deps.sh (.ci/run does)")
	}
	var stderr bytes.Buffer
	cmd := exec.Command("python3", filepath.Join("testdata", "read_parquet.py"), dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyarrow could not read %s: %v\n%s", dir, err, stderr.String())
	}
	var tab pyarrowTable
	if err := json.Unmarshal(out, &tab); err != nil {
		t.Fatal(err)
	}
	return tab
}

// allTypes is event k in testdata/schemas/alltypes.avsc, and what pyarrow
// must read back for it (read_parquet.py's plain JSON form).
func allTypes(k int, at time.Time) (map[string]any, map[string]any) {
	guid := make([]byte, 16)
	guid[0], guid[15] = 0xa1, byte(k)
	tsu := time.UnixMicro(1_700_000_000_000_000 + int64(k)*1001 + 1).UTC()
	day := time.Date(2020, 1, 1+k, 0, 0, 0, 0, time.UTC)
	dec := big.NewRat(int64((k-25)*100+7), 100)
	decf := big.NewRat(int64(k)*10001, 10000)
	u := fmt.Sprintf("%08x-0000-4000-8000-%012x", k, k*7)
	v := map[string]any{
		"header": map[string]any{"time": at, "server": "web-1", "service": "frontend", "guid": guid},
		"b":      k%2 == 0, "i": int32(k - 25), "l": int64(k) * 1e12, "f": float32(k) + 0.5, "d": float64(k) / 4,
		"s": fmt.Sprintf("s-%d", k), "by": []byte{byte(k), 0xff}, "e": []string{"RED", "GREEN", "BLUE"}[k%3],
		"fx": []byte{1, 2, 3, byte(k)}, "day": day, "tms": time.Duration(k)*time.Second + 5*time.Millisecond,
		"tsu": tsu, "dec": dec, "decf": decf, "u": u,
	}
	want := map[string]any{
		"header": map[string]any{"time": at.Format("2006-01-02T15:04:05.000000") + "+00:00", "server": "web-1", "service": "frontend", "guid": hex.EncodeToString(guid)},
		"b":      k%2 == 0, "i": float64(k - 25), "l": float64(k) * 1e12, "f": float64(k) + 0.5, "d": float64(k) / 4,
		"s": fmt.Sprintf("s-%d", k), "by": hex.EncodeToString([]byte{byte(k), 0xff}), "e": v["e"],
		"fx": hex.EncodeToString(v["fx"].([]byte)), "day": day.Format("2006-01-02"),
		"tms": time.Unix(0, 0).UTC().Add(v["tms"].(time.Duration)).Format("15:04:05.000000"), "tsu": tsu.Format("2006-01-02T15:04:05.000000") + "+00:00",
		"dec": dec.FloatString(2), "decf": decf.FloatString(4), "u": strings.ReplaceAll(u, "-", ""),
		"dt": at.Format("2006-01-02"), "hr": float64(at.Hour()),
	}
	if k%2 == 0 {
		v["opt"], want["opt"] = map[string]any{"string": fmt.Sprintf("o-%d", k)}, fmt.Sprintf("o-%d", k)
	} else {
		v["opt"], want["opt"] = nil, nil
	}
	switch {
	case k%3 == 0:
		v["optrec"], want["optrec"] = nil, nil
	case k%4 == 0:
		v["optrec"] = map[string]any{"tributary.events.Inner": map[string]any{"a": int32(k), "tags": []any{}}}
		want["optrec"] = map[string]any{"a": float64(k), "tags": []any{}}
	default:
		v["optrec"] = map[string]any{"tributary.events.Inner": map[string]any{"a": int32(k), "tags": []any{"t1", fmt.Sprintf("t-%d", k)}}}
		want["optrec"] = map[string]any{"a": float64(k), "tags": []any{"t1", fmt.Sprintf("t-%d", k)}}
	}
	arr, warr := []any{}, []any{}
	for j := range k % 4 {
		arr, warr = append(arr, int64(j*k)), append(warr, float64(j*k))
	}
	v["arr"], want["arr"] = arr, warr
	if k%5 == 0 {
		v["m"], want["m"] = map[string]any{}, []any{}
	} else {
		v["m"], want["m"] = map[string]any{"a": int32(k), "b": int32(-k)}, map[string]any{"a": float64(k), "b": float64(-k)}
	}
	var y, wy any
	if k%2 == 1 {
		y, wy = map[string]any{"double": 1.5}, 1.5
	}
	v["arrrec"] = []any{map[string]any{"x": fmt.Sprintf("r-%d", k), "y": y}}
	want["arrrec"] = []any{map[string]any{"x": fmt.Sprintf("r-%d", k), "y": wy}}
	switch k % 3 {
	case 0:
		v["gu"], want["gu"] = nil, nil
	case 1:
		v["gu"], want["gu"] = map[string]any{"int": int32(k)}, map[string]any{"member0": float64(k), "member1": nil}
	default:
		v["gu"], want["gu"] = map[string]any{"string": "g"}, map[string]any{"member0": nil, "member1": "g"}
	}
	return v, want
}

// A Parquet load read back by pyarrow (a reader nobody here wrote): every
// record of a schema using every Avro type once, with its value and its
// Parquet type, in Hive partitions whose dt and hr pyarrow sees and which
// match each event's header time. Files are snappy by default.
func TestParquetAllTypesReadByPyarrow(t *testing.T) {
	testenv.Needs(t, testenv.Python)
	env := loadertest.Start(t)
	const topic, n = "alltypes", 60
	env.CreateTopic(t, topic, 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	var events []loadertest.Event
	wants := map[string]map[string]any{}
	for k := 1; k <= n; k++ {
		at := from.Add(time.Duration(k) * 2 * time.Minute) // two hours
		v, want := allTypes(k, at)
		events = append(events, loadertest.Event{Partition: int32(k % 2), Value: v})
		wants[want["header"].(map[string]any)["guid"].(string)] = want
	}
	env.Produce(t, topic, loadertest.Schema(t, "alltypes"), events)

	dir := t.TempDir()
	cfg := config(env, "file://"+dir, topic)
	cfg.Format = loader.FormatParquet
	sum := run(t, cfg)
	if sum.Records != n || sum.Errors != 0 {
		t.Fatalf("loaded %d records, %d errors; want %d, 0", sum.Records, sum.Errors, n)
	}
	tab := pyarrowRead(t, filepath.Join(dir, topic))
	wantTypes := map[string]string{
		"b": "bool", "i": "int32", "l": "int64", "f": "float", "d": "double", "s": "string", "by": "binary",
		"e": "string", "fx": "fixed_size_binary[4]", "day": "date32[day]", "tms": "time32[ms]",
		"tsu": "timestamp[us, tz=UTC]", "dec": "decimal128(9, 2)", "decf": "decimal128(18, 4)",
		"opt": "string", "arr": "list<element: int64 not null>", "m": "map<string, int32 ly>",
		"header": "struct<time: timestamp[ms, tz=UTC] not null, server: string not null, service: string not null, guid: fixed_size_binary[16] not null>",
	}
	delete(wantTypes, "m") // pyarrow's spelling of a map's value field varies by version; the values are checked below
	for col, want := range wantTypes {
		if got := tab.Types[col]; got != want {
			t.Errorf("column %s: pyarrow reads %q, want %q", col, got, want)
		}
	}
	if !strings.Contains(tab.Types["u"], "uuid") && tab.Types["u"] != "fixed_size_binary[16]" {
		t.Errorf("column u: pyarrow reads %q, want a UUID", tab.Types["u"])
	}
	if len(tab.Rows) != n {
		t.Fatalf("pyarrow read %d rows, want %d", len(tab.Rows), n)
	}
	seen := map[string]bool{}
	for _, row := range tab.Rows {
		guid, _ := row["header"].(map[string]any)["guid"].(string)
		want := wants[guid]
		if want == nil || seen[guid] {
			t.Fatalf("row %v: unknown or repeated guid", row)
		}
		seen[guid] = true
		for col, w := range want {
			if !reflect.DeepEqual(row[col], w) {
				t.Errorf("guid %s column %s: pyarrow reads %#v, want %#v", guid, col, row[col], w)
			}
		}
	}
}

// Three writer schemas of one topic into one table schema: records of
// pageview v1 are resolved to v2, the subject's latest, so every file has
// v2's columns (sessionId null, durationMs a long) and pyarrow reads one
// schema. A record whose body does not decode goes to _errors and the run
// goes on.
func TestParquetTableSchemaAndErrors(t *testing.T) {
	testenv.Needs(t, testenv.Python)
	env := loadertest.Start(t)
	const topic = "pvtable"
	env.CreateTopic(t, topic, 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	v1 := loadertest.PageViews(0, 100, 2, from, time.Hour)
	env.Produce(t, topic, loadertest.Schema(t, "pageview"), v1)
	v2 := loadertest.PageViews(100, 100, 2, from, time.Hour)
	for _, e := range v2 {
		delete(e.Value, "userAgent")
		e.Value["durationMs"] = int64(e.Value["durationMs"].(int32))
		e.Value["sessionId"] = map[string]any{"string": "sess"}
	}
	env.Produce(t, topic, loadertest.Schema(t, "pageview-v2"), v2)
	ss, err := env.Registry.LookupSchema(context.Background(), topic+"-value", sr.Schema{Schema: loadertest.Schema(t, "pageview")})
	if err != nil {
		t.Fatal(err)
	}
	bad := append(schema.AppendEnvelope(nil, ss.ID), 0xff, 0xff, 0xff) // a header record cut short
	env.ProduceRaw(t, topic, 1, bad)

	dir := t.TempDir()
	cfg := config(env, "file://"+dir, topic)
	cfg.Format = loader.FormatParquet
	cfg.MaxErrors = 10
	sum := run(t, cfg)
	if sum.Records != 200 || sum.Errors != 1 {
		t.Fatalf("loaded %d records, %d errors; want 200 and 1", sum.Records, sum.Errors)
	}
	tab := pyarrowRead(t, filepath.Join(dir, topic))
	if len(tab.Rows) != 200 {
		t.Fatalf("pyarrow read %d rows, want 200", len(tab.Rows))
	}
	if tab.Types["durationMs"] != "int64" || tab.Types["sessionId"] != "string" || tab.Types["userAgent"] != "" {
		t.Errorf("table columns %v: want v2's (durationMs int64, sessionId, no userAgent)", tab.Types)
	}
	sessions := 0
	for _, row := range tab.Rows {
		if row["sessionId"] == "sess" {
			sessions++
		}
		at, err := time.Parse("2006-01-02T15:04:05.000000+00:00", row["header"].(map[string]any)["time"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if row["dt"] != at.Format("2006-01-02") || row["hr"] != float64(at.Hour()) {
			t.Errorf("event at %v in partition dt=%v/hr=%v", at, row["dt"], row["hr"])
		}
	}
	if sessions != 100 {
		t.Errorf("%d rows have v2's sessionId, want 100", sessions)
	}
	var errLines int
	filepath.WalkDir(filepath.Join(dir, "_errors"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			errLines += bytes.Count(b, []byte("\n"))
		}
		return nil
	})
	if errLines != 1 {
		t.Errorf("_errors holds %d records, want the bad one", errLines)
	}
	var names []string
	filepath.WalkDir(filepath.Join(dir, topic), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, strings.TrimPrefix(p, dir+"/"))
		}
		return nil
	})
	for _, name := range names {
		if !strings.Contains(name, "/dt=") || !(strings.HasSuffix(name, ".parquet") || strings.HasSuffix(name, "/_SUCCESS")) {
			t.Errorf("unexpected file %s", name)
		}
		if strings.HasSuffix(name, ".parquet") && !strings.Contains(name, fmt.Sprintf(".s%d.", latestID(t, env, topic))) {
			t.Errorf("%s is not written in the table schema", name)
		}
	}
}

func latestID(t *testing.T, env *loadertest.Env, topic string) int {
	ss, err := env.Registry.SchemaByVersion(context.Background(), topic+"-value", -1)
	if err != nil {
		t.Fatal(err)
	}
	return ss.ID
}

// Three writer schemas where the latest (registered with compatibility
// checks off) cannot read the older two: the latest is the table schema,
// and the older records keep their own writer schema in files of their own
// rather than being refused or altered. Every record is loaded.
func TestParquetIncompatibleWritersKeepTheirSchema(t *testing.T) {
	env := loadertest.Start(t)
	const topic = "pvthree"
	env.CreateTopic(t, topic, 1)
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	ctx := context.Background()
	v1 := loadertest.PageViews(0, 50, 1, from, time.Hour)
	env.Produce(t, topic, loadertest.Schema(t, "pageview"), v1)
	v2 := loadertest.PageViews(50, 50, 1, from, time.Hour)
	for _, e := range v2 {
		delete(e.Value, "userAgent")
		e.Value["durationMs"] = int64(e.Value["durationMs"].(int32))
		e.Value["sessionId"] = nil
	}
	env.Produce(t, topic, loadertest.Schema(t, "pageview-v2"), v2)
	for _, r := range env.Registry.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, topic+"-value") {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	v3text := strings.Replace(loadertest.Schema(t, "pageview-v2"), `{"name": "memberId", "type": "long"`, `{"name": "memberId", "type": "string"`, 1)
	v3 := loadertest.PageViews(100, 30, 1, from, time.Hour)
	for _, e := range v3 {
		delete(e.Value, "userAgent")
		e.Value["durationMs"] = int64(e.Value["durationMs"].(int32))
		e.Value["sessionId"] = nil
		e.Value["memberId"] = fmt.Sprint(e.Value["memberId"])
	}
	env.Produce(t, topic, v3text, v3)

	dir := t.TempDir()
	cfg := config(env, "file://"+dir, topic)
	cfg.Format = loader.FormatParquet
	if sum := run(t, cfg); sum.Records != 130 || sum.Errors != 0 {
		t.Fatalf("loaded %d records, %d errors; want 130, 0", sum.Records, sum.Errors)
	}
	ids := map[string]int{}
	for _, name := range []string{"pageview", "pageview-v2"} {
		ss, err := env.Registry.LookupSchema(ctx, topic+"-value", sr.Schema{Schema: loadertest.Schema(t, name)})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = ss.ID
	}
	ids["v3"] = latestID(t, env, topic)
	rows := map[int]int64{}
	filepath.WalkDir(filepath.Join(dir, topic), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(p, ".parquet") {
			return nil
		}
		b, _ := os.ReadFile(p)
		f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		i := strings.LastIndex(p, ".s")
		id, _ := strconv.Atoi(strings.TrimSuffix(p[i+2:], ".parquet"))
		rows[id] += f.NumRows()
		return nil
	})
	if want := map[int]int64{ids["pageview"]: 50, ids["pageview-v2"]: 50, ids["v3"]: 30}; !reflect.DeepEqual(rows, want) {
		t.Errorf("rows by the schema id of their file: %v, want %v (ids %v)", rows, want, ids)
	}
}

// With the audit completing hours, a Parquet load's hours (dt=/hr=
// directories) get their _SUCCESS once the audit has judged them: the
// hour's topic is found from its directory whatever the layout.
func TestParquetHoursCompleteByAudit(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "pqaudit", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	env.Produce(t, "pqaudit", loadertest.Schema(t, "pageview"), loadertest.PageViews(0, 600, 2, from, 2*time.Hour))
	dir := t.TempDir()
	cfg := config(env, "file://"+dir, "pqaudit")
	cfg.Format, cfg.Audit = loader.FormatParquet, &loader.AuditConfig{}
	sum := run(t, cfg)
	if len(sum.Markers) != 2 {
		t.Errorf("hours marked complete: %v, want the two loaded", sum.Markers)
	}
	for _, h := range []time.Time{from, from.Add(time.Hour)} {
		if _, err := os.Stat(filepath.Join(dir, "pqaudit", h.Format("dt=2006-01-02/hr=15"), "_SUCCESS")); err != nil {
			t.Errorf("hour %s: %v", h.Format(time.DateTime), err)
		}
	}
}
