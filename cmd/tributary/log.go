package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tributary-io/tributary/broker/log"
)

func init() {
	register("log", "check partition logs offline: log verify --data-dir DIR", runLog)
}

func runLog(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "verify" {
		return errors.New("usage: tributary log verify --data-dir DIR")
	}
	fs := newFlags("log")
	dataDir := fs.String("data-dir", "./data", "data directory of a broker, or one partition directory")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	return verifyLogs(os.Stdout, *dataDir)
}

// verifyLogs prints what log.Verify found, one block per partition and a
// summary, and fails with exit status 1 when anything is damaged so that
// scripts can act on it.
func verifyLogs(w io.Writer, dataDir string) error {
	status := newStatusLine(os.Stderr)
	var bytes int64
	rep, err := log.VerifyEach(dataDir, func(done, total int, pc log.PartitionCheck) {
		bytes += pc.Bytes
		status.Set("verified %d/%d partitions, %s", done, total, mib(bytes))
	})
	status.Done()
	if err != nil {
		return err
	}
	damaged, problems := 0, 0
	for _, p := range rep.Partitions {
		name, _ := filepath.Rel(dataDir, p.Dir)
		if name == "." {
			name = filepath.Base(p.Dir)
		}
		state := "ok"
		if len(p.Problems) > 0 {
			state = fmt.Sprintf("DAMAGED (%d problem(s))", len(p.Problems))
			damaged++
			problems += len(p.Problems)
		}
		fmt.Fprintf(w, "%s: %d segments, %d batches, %d bytes, offsets [%d, %d): %s\n",
			name, p.Segments, p.Batches, p.Bytes, max(p.StartOffset, 0), p.EndOffset, state)
		for _, pr := range p.Problems {
			fmt.Fprintf(w, "  %s\n", pr)
		}
	}
	fmt.Fprintf(w, "%d partition(s) checked, %d damaged, %d problem(s)\n", len(rep.Partitions), damaged, problems)
	if damaged > 0 {
		return exitError(1)
	}
	return nil
}
