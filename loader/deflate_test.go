package loader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// The deflate level trades the loader's CPU for warehouse bytes and
// nothing else: files written at level 1 and at level 9 hold the same
// records, both read back by an independent Avro reader (goavro), and the
// level-9 files are smaller. A level outside 1-9, or other than the
// default with another codec, is refused before the run touches anything.
func TestDeflateLevel(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "levels", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	events := loadertest.PageViews(0, 4000, 2, from, time.Hour)
	env.Produce(t, "levels", loadertest.Schema(t, "pageview"), events)

	size := map[int]int64{}
	for _, level := range []int{1, 9} {
		url := "file://" + t.TempDir()
		cfg := config(env, url, "levels")
		cfg.Codec, cfg.DeflateLevel = "deflate", level
		run(t, cfg)
		c := loadertest.Read(t, openWarehouse(t, url))
		loadertest.CheckExactlyOnce(t, c, "levels", events)
		for _, f := range c.Files {
			if f.Codec != "deflate" {
				t.Errorf("level %d: %s has codec %q", level, f.Path, f.Codec)
			}
			size[level] += f.Size
		}
	}
	t.Logf("warehouse bytes: level 1 %d, level 9 %d", size[1], size[9])
	if size[9] >= size[1] {
		t.Errorf("level 9 wrote %d bytes, level 1 %d: the level is not applied", size[9], size[1])
	}

	for _, bad := range []int{-1, 10} {
		url := "file://" + t.TempDir()
		cfg := config(env, url, "levels")
		cfg.DeflateLevel = bad
		sum, err := loader.Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "use 1 (fastest) to 9 (smallest)") {
			t.Fatalf("deflate level %d: %v; want it refused with the allowed range", bad, err)
		}
		if sum != nil && sum.Committed {
			t.Fatalf("deflate level %d: the run committed", bad)
		}
		if c := loadertest.Read(t, openWarehouse(t, url)); len(c.Files)+len(c.State) > 0 {
			t.Fatalf("deflate level %d: the refused run left %d files and state %v", bad, len(c.Files), c.State)
		}
	}
	// A level with another codec would be ignored: refused, unless it is
	// the default.
	cfg := config(env, "file://"+t.TempDir(), "levels")
	cfg.Codec, cfg.DeflateLevel = "snappy", 9
	if _, err := loader.Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "applies to the deflate codec only") {
		t.Fatalf("snappy with deflate level 9: %v; want it refused", err)
	}
	cfg.DeflateLevel = loader.DefaultDeflateLevel
	run(t, cfg)
}
