package loader

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// A table's version is its commit point: of writers racing to publish the
// same version (a run paused past its lease and the run, compaction or
// expiry that went on meanwhile), exactly one wins, the others are told
// the table moved on, and the version holds the winner's metadata, never
// replaced. Round after round, on a local warehouse and HDFS (rename
// without replacing) and on S3 (a conditional PUT).
func TestTableVersionRace(t *testing.T) {
	for _, kind := range []string{"local", "s3", "hdfs"} {
		t.Run(kind, func(t *testing.T) {
			var w warehouse.FS
			if kind == "local" {
				w = localWarehouse(t)
			} else {
				testenv.Needs(t, testenv.JVM)
				url := testenv.S3Warehouse
				if kind == "hdfs" {
					url = testenv.HDFSWarehouse
				}
				var err error
				if w, err = warehouse.Open(url(t)); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { w.Close() })
			}
			b := warehouse.NewBatch(w)
			md := newIceMetadata(iceRoot(w), "db/race", time.Now())
			if err := publishIceVersion(b, "db/race", 1, md, "first", nil); err != nil {
				t.Fatal(err)
			}
			const racers, rounds = 4, 12
			for v := 2; v < 2+rounds; v++ {
				var wg sync.WaitGroup
				errs := make([]error, racers)
				for i := range racers {
					wg.Go(func() {
						next := md.clone()
						next.Properties["racer"] = strconv.Itoa(i)
						errs[i] = publishIceVersion(b, "db/race", v, next, fmt.Sprintf("r%d-%d", v, i), nil)
					})
				}
				wg.Wait()
				winner := -1
				for i, err := range errs {
					switch {
					case err == nil && winner >= 0:
						t.Fatalf("version %d: racers %d and %d both committed it", v, winner, i)
					case err == nil:
						winner = i
					case !errors.Is(err, errTableMoved):
						t.Fatalf("version %d: racer %d: %v, want a refusal (the table moved on)", v, i, err)
					}
				}
				if winner < 0 {
					t.Fatalf("version %d: no racer committed it", v)
				}
				got, err := readIceTable(w, "db/race")
				if err != nil || got.version != v || got.Properties["racer"] != strconv.Itoa(winner) {
					t.Fatalf("version %d: the table reads %+v (%v), want the winner's (racer %d)", v, got, err, winner)
				}
			}
			infos, err := w.ReadDir("db/race/metadata")
			if err != nil {
				t.Fatal(err)
			}
			for _, fi := range infos {
				if strings.HasPrefix(fi.Name(), ".") && fi.Name() != "."+iceHintName+".tmp" {
					t.Errorf("left behind: %s", fi.Name())
				}
			}
		})
	}
}
