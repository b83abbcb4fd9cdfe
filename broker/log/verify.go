package log

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// VerifyReport is what Verify found in a data directory.
type VerifyReport struct {
	Partitions []PartitionCheck
}

// Damaged reports whether any partition has a problem.
func (r *VerifyReport) Damaged() bool {
	for _, p := range r.Partitions {
		if len(p.Problems) > 0 {
			return true
		}
	}
	return false
}

// PartitionCheck is the result of checking one partition directory.
type PartitionCheck struct {
	Dir         string
	Segments    int
	Batches     int64 // valid batches
	Bytes       int64 // bytes of all segment files
	StartOffset int64 // first offset held (-1 when empty)
	EndOffset   int64 // offset after the last valid batch
	Problems    []Problem
}

// Problem is one damaged stretch of a segment, or an index entry that does
// not point at the start of a batch.
type Problem struct {
	File        string // file name within the partition directory
	FromByte    int64
	ToByte      int64 // exclusive
	FirstOffset int64 // offsets the stretch held: [FirstOffset, NextOffset); -1 when unknown
	NextOffset  int64
	Reason      string
}

func (p Problem) String() string {
	s := fmt.Sprintf("%s bytes [%d, %d)", p.File, p.FromByte, p.ToByte)
	if p.FirstOffset >= 0 {
		s += fmt.Sprintf(" offsets [%d, %d)", p.FirstOffset, p.NextOffset)
	}
	return s + ": " + p.Reason
}

// Verify checks every partition under dataDir (dataDir itself when it holds
// segments, else its subdirectories that do) without changing anything:
// the framing and CRC32C of every batch, base offsets following each other
// (across recorded gaps), segments continuing each other, and every offset
// index entry pointing at the start of the batch it names. It reads each
// segment once, sequentially, a window at a time. The error is for a
// directory that cannot be read at all; damage is in the report.
func Verify(dataDir string) (VerifyReport, error) { return VerifyEach(dataDir, nil) }

// VerifyEach is Verify telling each (when not nil) about every partition as
// it is checked, with how many of how many are done, so that a long check
// of a big data directory can show its progress.
func VerifyEach(dataDir string, each func(done, total int, pc PartitionCheck)) (VerifyReport, error) {
	var rep VerifyReport
	dirs, err := partitionDirs(dataDir)
	if err != nil {
		return rep, err
	}
	for i, dir := range dirs {
		pc, err := verifyPartition(dir)
		if err != nil {
			return rep, fmt.Errorf("verify %s: %w", dir, err)
		}
		rep.Partitions = append(rep.Partitions, pc)
		if each != nil {
			each(i+1, len(dirs), pc)
		}
	}
	return rep, nil
}

func partitionDirs(dataDir string) ([]string, error) {
	if bases, err := segmentBases(dataDir); err != nil || len(bases) > 0 {
		return []string{dataDir}, err
	}
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(dataDir, e.Name())
		if bases, err := segmentBases(d); err == nil && len(bases) > 0 {
			dirs = append(dirs, d)
		}
	}
	return dirs, nil
}

// segmentBases lists the base offsets of dir's segment files, sorted,
// touching nothing (listSegments, for Open, also clears leftovers).
func segmentBases(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	for _, e := range ents {
		name := e.Name()
		if len(name) != 24 || !strings.HasSuffix(name, ".log") {
			continue
		}
		if base, err := strconv.ParseInt(name[:20], 10, 64); err == nil && base >= 0 {
			bases = append(bases, base)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

func verifyPartition(dir string) (PartitionCheck, error) {
	pc := PartitionCheck{Dir: dir, StartOffset: -1}
	bases, err := segmentBases(dir)
	if err != nil {
		return pc, err
	}
	var prev *segment
	for i, base := range bases {
		s, err := openSegment(OSFS{}, dir, base)
		if err != nil {
			return pc, err
		}
		pc.Segments++
		pc.Bytes += s.size
		if prev != nil && base != prev.gapEnd(prev.next) {
			pc.Problems = append(pc.Problems, Problem{File: filepath.Base(s.path), FirstOffset: -1,
				Reason: fmt.Sprintf("segment starts at offset %d but the previous one ends at %d", base, prev.next)})
		}
		below := int64(math.MaxInt64)
		if i+1 < len(bases) {
			below = bases[i+1]
		}
		pc.Problems = append(pc.Problems, checkSegment(s, below, &pc)...)
		if pc.StartOffset < 0 && s.next > s.base {
			pc.StartOffset = s.base
		}
		pc.EndOffset = s.next
		if prev != nil {
			prev.close()
		}
		prev = s
	}
	if prev != nil {
		prev.close()
	}
	// A replica that found damage and has not fetched it again yet lacks
	// the offsets from its marker's on (repairmarker.go).
	if off, ok, err := ReadRepairFrom(OSFS{}, dir); err != nil {
		pc.Problems = append(pc.Problems, Problem{File: RepairMarkerFile, FirstOffset: -1, Reason: err.Error()})
	} else if ok {
		pc.Problems = append(pc.Problems, Problem{File: RepairMarkerFile, FirstOffset: off, NextOffset: max(off, pc.EndOffset),
			Reason: "repair pending: this replica quarantined damage there and fetches everything from it again from its leader when it next follows"})
	}
	return pc, nil
}

// checkSegment scans one segment and checks its index against the batches.
func checkSegment(s *segment, below int64, pc *PartitionCheck) []Problem {
	var problems, badEntries []Problem
	var badPos []int64 // segment positions the bad entries point at
	entries, ierr := readIndexFile(s.indexPath, s.size)
	if ierr != nil {
		problems = append(problems, Problem{File: filepath.Base(s.indexPath), FirstOffset: -1, Reason: ierr.Error()})
	}
	badEntry := func(i int, why string) {
		e := entries[i]
		badPos = append(badPos, int64(e.pos))
		badEntries = append(badEntries, Problem{File: filepath.Base(s.indexPath), FromByte: int64(i) * indexEntrySize, ToByte: int64(i+1) * indexEntrySize,
			FirstOffset: -1, Reason: fmt.Sprintf("index entry for offset %d points at byte %d, %s", s.base+int64(e.rel), e.pos, why)})
	}
	j := 0
	visit := func(pos int64, h *recordbatch.Header) {
		pc.Batches++
		for ; j < len(entries) && int64(entries[j].pos) < pos; j++ {
			badEntry(j, "not the start of a valid batch")
		}
		if j < len(entries) && int64(entries[j].pos) == pos {
			if s.base+int64(entries[j].rel) != h.BaseOffset {
				badEntry(j, fmt.Sprintf("the batch of offset %d", h.BaseOffset))
			}
			j++
		}
	}
	end, damaged, tail := s.scan(newReader(s.f, s.size, scanWindow), math.MaxInt64, below, visit)
	for ; j < len(entries); j++ {
		badEntry(j, "not the start of a valid batch")
	}
	for _, d := range damaged {
		problems = append(problems, Problem{File: filepath.Base(s.path), FromByte: d.from, ToByte: d.to,
			FirstOffset: d.firstLost, NextOffset: d.nextKept, Reason: d.problem.String()})
	}
	// An entry pointing at the start of a damaged stretch is right; the
	// stretch is the problem.
	for i, e := range badEntries {
		inDamage := false
		for _, d := range damaged {
			inDamage = inDamage || badPos[i] == d.from
		}
		if tail != nil && badPos[i] == end {
			inDamage = true
		}
		if !inDamage {
			problems = append(problems, e)
		}
	}
	if tail != nil {
		why := tail.String()
		if tail.torn {
			why += " (what a crash leaves; the next start cuts it)"
		}
		problems = append(problems, Problem{File: filepath.Base(s.path), FromByte: end, ToByte: s.size,
			FirstOffset: -1, Reason: why})
	}
	return problems
}

// readIndexFile reads and decodes an index; a missing one is no damage
// (Open rebuilds it) and reads as empty.
func readIndexFile(path string, segSize int64) ([]indexEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeIndex(b, segSize)
}
