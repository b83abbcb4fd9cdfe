package system_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// `tributary load` and `tributary audit count --warehouse` with the HDFS
// flags, against a Kerberized cluster of two NameNodes with privacy on the
// data transfer, as the recipe in docs/pipeline.md shows them: the load commits
// every record, and the warehouse count finds each of them.
func TestLoadIntoKerberizedHDFS(t *testing.T) {
	testenv.Needs(t, testenv.HDFS, testenv.JVM, testenv.Tributary)
	const n = 1200
	env := loadertest.Start(t)
	env.CreateTopic(t, "secured", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	env.Produce(t, "secured", loadertest.Schema(t, "pageview"), loadertest.PageViews(0, n, 2, from, time.Hour))
	c := testenv.StartKerberizedHDFS(t)
	wh := c.Warehouse(t)
	hdfs := []string{"--warehouse", wh, "--hadoop-conf", c.ConfDir, "--hdfs-principal", "tributary@" + c.Realm,
		"--hdfs-keytab", c.Keytab, "--krb5-conf", c.Krb5Conf, "--hdfs-data-transfer-protection", "privacy"}

	out := testenv.Run(t, "", 0, append([]string{"load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL,
		"--topics", "secured", "--json", "--quiet"}, hdfs...)...)
	var sum struct {
		Committed bool   `json:"committed"`
		Records   int64  `json:"records"`
		Warehouse string `json:"warehouse"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || !sum.Committed || sum.Records != n || sum.Warehouse != wh {
		t.Fatalf("load: %v, summary %+v, want %d records committed in %s\n%s", err, sum, n, wh, out)
	}

	_, stderr := testenv.RunBoth(t, "", 0, append([]string{"audit", "count", "--brokers", env.Brokers[0], "--registry", env.RegistryURL,
		"--tier", "warehouse", "--topics", "secured", "--dry-run"}, hdfs...)...)
	if want := fmt.Sprintf("events=%d", n); !strings.Contains(stderr, want) {
		t.Fatalf("audit count --warehouse: stderr %q, want it to say %s", stderr, want)
	}
}
