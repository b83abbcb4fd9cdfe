package loader_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// sparkTable is what testdata/read_spark.py reads of a table with Spark.
type sparkTable struct {
	Types     map[string]string `json:"types"`
	Hours     map[string]int    `json:"hours"`
	Snapshots int               `json:"snapshots"`
	Offsets   string            `json:"offsets"`
	Rows      []map[string]any  `json:"rows"`
}

func sparkRead(t *testing.T, warehouse, ns, table string) sparkTable {
	t.Helper()
	jar := testenv.SparkIcebergRuntime(t)
	var stderr bytes.Buffer
	cmd := exec.Command("python3", filepath.Join("testdata", "read_spark.py"), jar, warehouse, ns, table)
	cmd.Stderr = &stderr
	// Spark binds and names the loopback address only, and hands
	// timestamps to Python in UTC.
	cmd.Env = append(os.Environ(), "SPARK_LOCAL_IP=127.0.0.1", "TZ=UTC")
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Spark could not read %s.%s: %v\n%s", ns, table, err, stderr.String())
	}
	t.Logf("Spark read %s.%s in %v", ns, table, time.Since(start).Round(time.Millisecond))
	var tab sparkTable
	if err := json.Unmarshal(out, &tab); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return tab
}

// An Iceberg table of a schema that uses every Avro type Spark can read
// (all but time-millis and time-micros: Spark refuses any table with a
// time column, "Spark does not support time fields"), loaded in two runs
// and read by Apache Spark (pyspark with Iceberg's Spark runtime, through
// Spark's own file-system catalog on the warehouse): Spark SQL counts each
// hour's records as produced, sees both snapshots and the current one's
// offsets, and reads every column of every row with the value the
// producer sent.
func TestIcebergReadBySpark(t *testing.T) {
	env := loadertest.Start(t)
	const topic, n = "icespark", 60
	env.CreateTopic(t, topic, 2)
	var sch map[string]any
	if err := json.Unmarshal([]byte(loadertest.Schema(t, "alltypes")), &sch); err != nil {
		t.Fatal(err)
	}
	sch["fields"] = slices.DeleteFunc(sch["fields"].([]any), func(f any) bool { return f.(map[string]any)["name"] == "tms" })
	noTime, _ := json.Marshal(sch)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	var events []loadertest.Event
	wants := map[string]map[string]any{}
	hours := map[string]int{}
	for k := 1; k <= n; k++ {
		at := from.Add(time.Duration(k) * 2 * time.Minute) // two hours
		v, want := allTypes(k, at)
		delete(v, "tms")
		for _, c := range []string{"tms", "dt", "hr"} { // dt, hr: pyarrow's Hive partition columns
			delete(want, c)
		}
		want["u"] = v["u"] // Spark reads a uuid as its text
		events = append(events, loadertest.Event{Partition: int32(k % 2), Value: v})
		wants[want["header"].(map[string]any)["guid"].(string)] = want
		hours[at.UTC().Format("2006-01-02-15")]++
	}
	env.Produce(t, topic, string(noTime), events[:n/2])
	dir := t.TempDir()
	cfg := config(env, "file://"+dir, topic)
	cfg.Table = "db"
	run(t, cfg)
	env.Produce(t, topic, string(noTime), events[n/2:])
	run(t, cfg)

	tab := sparkRead(t, "file://"+dir, "db", topic)
	if !reflect.DeepEqual(tab.Hours, hours) {
		t.Errorf("Spark SQL counts %v per hour, want %v", tab.Hours, hours)
	}
	if tab.Snapshots != 2 || tab.Offsets != `{"0":30,"1":30}` {
		t.Errorf("Spark sees %d snapshots, the current one's offsets %s; want 2 and {\"0\":30,\"1\":30}", tab.Snapshots, tab.Offsets)
	}
	wantTypes := map[string]string{
		"b": "boolean", "i": "int", "l": "bigint", "f": "float", "d": "double", "s": "string", "by": "binary",
		"e": "string", "fx": "binary", "day": "date", "tsu": "timestamp", "dec": "decimal(9,2)", "decf": "decimal(18,4)",
		"u": "string", "arr": "array<bigint>", "m": "map<string,int>", "_event_time": "timestamp",
		"header": "struct<time:timestamp,server:string,service:string,guid:binary>",
	}
	for col, want := range wantTypes {
		if got := tab.Types[col]; got != want {
			t.Errorf("column %s: Spark reads %q, want %q", col, got, want)
		}
	}
	if len(tab.Rows) != n {
		t.Fatalf("Spark read %d rows, want %d", len(tab.Rows), n)
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
			got := row[col]
			if m, ok := got.(map[string]any); ok && len(m) == 0 && reflect.DeepEqual(w, []any{}) {
				continue // an empty map: pyarrow's form of it is a list
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("guid %s column %s: Spark reads %#v, want %#v", guid, col, got, w)
			}
		}
	}
}

// A table committed through an Iceberg REST catalog (Apache Iceberg's
// reference server) and read by Spark through the same catalog: Spark SQL
// counts each hour's records as produced, and sees the snapshot and its
// offsets.
func TestIcebergRESTReadBySpark(t *testing.T) {
	env := loadertest.Start(t)
	const n = 1200
	env.CreateTopic(t, "icerestspark", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	events := loadertest.PageViews(0, n, 2, from, 2*time.Hour)
	env.Produce(t, "icerestspark", loadertest.Schema(t, "pageview"), events)
	hours := map[string]int{}
	for _, e := range events {
		hours[e.Value["header"].(map[string]any)["time"].(time.Time).UTC().Format("2006-01-02-15")]++
	}
	url := "file://" + t.TempDir()
	srv := testenv.StartIcebergREST(t, url)
	cfg := config(env, url, "icerestspark")
	cfg.Table, cfg.Catalog = "db", loader.CatalogConfig{Type: loader.CatalogREST, URI: srv.URI}
	run(t, cfg)

	tab := sparkRead(t, "rest:"+srv.URI, "db", "icerestspark")
	if !reflect.DeepEqual(tab.Hours, hours) || len(tab.Rows) != n {
		t.Errorf("Spark SQL counts %v per hour and reads %d rows; want %v and %d", tab.Hours, len(tab.Rows), hours, n)
	}
	if tab.Snapshots != 1 || tab.Offsets != `{"0":600,"1":600}` {
		t.Errorf("Spark sees %d snapshots, the current one's offsets %s; want 1 and {\"0\":600,\"1\":600}", tab.Snapshots, tab.Offsets)
	}
}
