package loader

// The floor. Pruning leaves an empty file (a tombstone) under each pruned
// commit's number so that no run can create that number again (fence.go);
// a minutely job leaves half a million of them a year in
// _tributary/commits, and every run lists them all. Once floorEvery
// tombstones have piled up, pruning writes a floor and deletes them:
//
//   - floor-<N>.json names N, the highest number listed then, and the
//     numbers at or below N whose commits held state (live). From then on
//     a commit numbered N or below that the floor does not name is void:
//     readers skip it, and numbers start above N.
//   - The floor is durable before any tombstone goes. A run paused between
//     listing the commits and creating its number can then create a number
//     whose tombstone was deleted meanwhile; right after its create it
//     lists the commits again, finds its number void, takes its file back
//     and numbers again (publish), where the fence's checks see the
//     commits made meanwhile.
//   - Numbers are taken one past the highest, so every number up to N
//     existed when the floor was listed: one created after that at or
//     below N can only be such a void one.
//
// The highest floor rules; older ones are deleted by the next floor.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// floorEvery is how many tombstones make pruning write a floor (a variable
// for tests).
var floorEvery = 1000

const floorPrefix = "floor-"

// floorName is the floor at n.
func floorName(n int64) string {
	return path.Join(commitsDir, fmt.Sprintf("%s%012d.json", floorPrefix, n))
}

// parseFloorName returns the number of a commits entry that is a floor.
func parseFloorName(name string) (int64, bool) {
	s, ok := strings.CutPrefix(name, floorPrefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ".json")
	if !ok || len(s) != 12 {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0
}

// floor is a floor as read: commits numbered at most N and not Live are
// void.
type floor struct {
	N    int64   `json:"floor"`
	Live []int64 `json:"live"`
}

// voids reports whether the floor voids commit seq (f may be nil).
func (f *floor) voids(seq int64) bool {
	return f != nil && seq <= f.N && !slices.Contains(f.Live, seq)
}

// readFloor reads floor n.
func readFloor(w warehouse.FS, n int64) (*floor, error) {
	data, err := readStateFile(w, floorName(n))
	if err != nil {
		return nil, err
	}
	var f floor
	if err := json.Unmarshal(data, &f); err != nil || f.N != n {
		return nil, fmt.Errorf("%s: %s is damaged (not a floor at %d the loader wrote): %v", w, floorName(n), n, err)
	}
	return &f, nil
}

// voided reports whether a floor listed now voids commit seq: the check a
// run makes right after creating seq.
func voided(w warehouse.FS, seq int64) (bool, error) {
	cl, err := scanCommits(w)
	if err != nil {
		return false, err
	}
	return cl.floor.voids(seq), nil
}

// raiseFloor writes a floor at the highest number listed and deletes the
// tombstones, void commits and older floors under it, once at least
// floorEvery tombstones are listed.
func raiseFloor(w warehouse.FS) error {
	cl, err := scanCommits(w)
	if err != nil || len(cl.tombstones) < floorEvery {
		return err
	}
	f := floor{N: cl.last, Live: []int64{}}
	for _, c := range cl.commits {
		if !c.legacy && c.seq <= f.N {
			f.Live = append(f.Live, c.seq)
		}
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	name := floorName(f.N)
	if warehouse.WholeObjectWrites(w) {
		err = warehouse.WriteFile(w, name, data)
	} else if err = warehouse.WriteFile(w, name+".tmp", data); err == nil {
		err = w.Rename(name+".tmp", name)
	}
	if err == nil {
		if b, ok := w.(*warehouse.Batch); ok {
			err = b.Sync() // durable before a tombstone goes
		}
	}
	if err != nil {
		return fmt.Errorf("writing the commit floor %s: %w", name, err)
	}
	for _, name := range append(cl.tombstones, cl.below(f.N)...) {
		if err := w.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("deleting %s under the commit floor: %w", name, err)
		}
	}
	return nil
}

// commitLog is one listing of _tributary/commits.
type commitLog struct {
	commits    []commitEntry // committed manifests, in commit order, void ones left out
	last       int64         // the highest number taken: a commit's, a tombstone's or the floor's
	tombstones []string      // pruned commits' empty files
	void       []string      // commits the floor voids
	floors     []int64       // every floor listed
	floor      *floor        // the highest
}

// below returns the void commits and the floors under n.
func (cl *commitLog) below(n int64) []string {
	names := slices.Clone(cl.void)
	for _, f := range cl.floors {
		if f < n {
			names = append(names, floorName(f))
		}
	}
	return names
}
