package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// `tributary audit count --warehouse URL --table NS` counts a topic's
// Iceberg table per window, on a local warehouse and on S3: loaded in two
// runs, then compacted (so that the table's directories hold the replaced
// files beside the merged ones, which a count of the directories would
// read twice), every window holds what was produced into it, no more.
func TestAuditCountIcebergTable(t *testing.T) {
	const n = 2400
	env := loadertest.Start(t)
	env.CreateTopic(t, "tablecount", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	events := loadertest.PageViews(0, n, 2, from, 2*time.Hour)
	env.Produce(t, "tablecount", loadertest.Schema(t, "pageview"), events)
	want := map[string]int64{}
	for _, e := range events {
		at := e.Value["header"].(map[string]any)["time"].(time.Time)
		want[audit.WindowStart(at, audit.DefaultWindow).UTC().Format("2006-01-02 15:04")]++
	}
	for _, kind := range []string{"local", "s3"} {
		t.Run(kind, func(t *testing.T) {
			wh := "file://" + t.TempDir()
			if kind == "s3" {
				wh = testenv.S3Warehouse(t)
			}
			load := []string{"load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL, "--topics", "tablecount",
				"--warehouse", wh, "--table", "db", "--file-max-records", "200", "--json", "--quiet"}
			for _, limit := range []string{"1000", "0"} {
				out := testenv.Run(t, "", 0, append(load, "--max-records", limit)...)
				var sum struct {
					Committed bool `json:"committed"`
				}
				if err := json.Unmarshal([]byte(out), &sum); err != nil || !sum.Committed {
					t.Fatalf("load: %v\n%s", err, out)
				}
			}
			hours := []string{from.Format("2006-01-02T15"), from.Add(time.Hour).Format("2006-01-02T15")}
			for _, h := range hours {
				if out := testenv.Run(t, "", 0, "compact", "--warehouse", wh, "--table", "db", "--topic", "tablecount", "--hour", h); !strings.Contains(out, "files into 1,") {
					t.Fatalf("compact --hour %s: %q, want the hour's files merged into one", h, out)
				}
			}
			out, stderr := testenv.RunBoth(t, "", 0, "audit", "count", "--brokers", env.Brokers[0], "--registry", env.RegistryURL,
				"--tier", "warehouse", "--warehouse", wh, "--table", "db", "--topics", "tablecount", "--dry-run")
			got := map[string]int64{}
			sc := bufio.NewScanner(strings.NewReader(out))
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) == 6 && f[0] == "tablecount" {
					v, err := strconv.ParseInt(f[3], 10, 64)
					if err != nil {
						t.Fatalf("audit count printed %q", sc.Text())
					}
					got[f[1]+" "+f[2]] = v
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("audit count --table counted per window\n%v\nwant\n%v\n(stderr %s)", got, want, stderr)
			}
			if w := fmt.Sprintf("events=%d", n); !strings.Contains(stderr, w) {
				t.Errorf("audit count --table: stderr %q, want it to say %s", stderr, w)
			}
		})
	}
}
