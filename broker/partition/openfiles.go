package partition

import (
	"log/slog"

	"golang.org/x/sys/unix"
)

// Every open partition log holds descriptors (one per segment file, two
// more on the active segment), so the descriptor limit, not memory, decides
// how many partitions can be open at once. The broker raises its soft limit
// as far as the hard limit allows, and gives the partition logs half of it:
// the other half is for client connections, group offset files and the
// files the broker opens briefly.

// RaiseOpenFileLimit raises the soft RLIMIT_NOFILE to the hard limit and
// returns the soft limit in force afterwards.
func RaiseOpenFileLimit(logger *slog.Logger) uint64 {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		logger.Warn("reading the open file limit", "err", err)
		return 0
	}
	if lim.Cur < lim.Max {
		raised := unix.Rlimit{Cur: lim.Max, Max: lim.Max}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err != nil {
			logger.Warn("raising the open file limit", "soft", lim.Cur, "hard", lim.Max, "err", err)
		} else {
			lim.Cur = lim.Max
		}
	}
	logger.Info("open file limit", "soft", lim.Cur, "hard", lim.Max)
	return lim.Cur
}

// FileBudget is the default descriptor budget (the broker's
// MaxPartitionFiles): half the
// descriptor limit, or no limit when the limit is unknown or unlimited.
func FileBudget(limit uint64) int {
	if limit == 0 || limit == unix.RLIM_INFINITY || limit > 1<<40 {
		return 0
	}
	return int(limit / 2)
}
