package system_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// `tributary load` into an S3-compatible store and `tributary audit count
// --warehouse s3://...` as the S3 recipe in docs/pipeline.md shows them: credentials
// from the environment, the store named by --s3-endpoint; the load commits
// every record, and the warehouse count finds each of them.
func TestLoadIntoS3(t *testing.T) {
	const n = 1200
	env := loadertest.Start(t)
	env.CreateTopic(t, "objects", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	env.Produce(t, "objects", loadertest.Schema(t, "pageview"), loadertest.PageViews(0, n, 2, from, time.Hour))
	wh := testenv.S3Warehouse(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	os.Unsetenv("AWS_ENDPOINT_URL_S3")
	s3 := []string{"--warehouse", wh, "--s3-endpoint", testenv.StartS3(t).Endpoint}

	out := testenv.Run(t, "", 0, append([]string{"load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL,
		"--topics", "objects", "--json", "--quiet"}, s3...)...)
	var sum struct {
		Committed bool  `json:"committed"`
		Records   int64 `json:"records"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || !sum.Committed || sum.Records != n {
		t.Fatalf("load: %v, summary %+v, want %d records committed\n%s", err, sum, n, out)
	}
	_, stderr := testenv.RunBoth(t, "", 0, append([]string{"audit", "count", "--brokers", env.Brokers[0], "--registry", env.RegistryURL,
		"--tier", "warehouse", "--topics", "objects", "--dry-run"}, s3...)...)
	if want := fmt.Sprintf("events=%d", n); !strings.Contains(stderr, want) {
		t.Fatalf("audit count --warehouse: stderr %q, want it to say %s", stderr, want)
	}
}
