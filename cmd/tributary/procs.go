package main

import (
	"log/slog"
	"os"
	"runtime"
)

// A broker spends much of its time in file system calls that block: each
// partition's fsync (hundreds of microseconds on a virtual disk), appends
// that wait on page-cache memory. A goroutine blocked in one holds its P
// (one of GOMAXPROCS) until the runtime's monitor notices, after 20 µs to
// 10 ms, and hands the P to another thread; meanwhile the read loops and
// flushes behind it wait with a core idle. With GOMAXPROCS at the number of
// cores, a two-core broker with eight partitions fsyncing at once is
// often stalled that way. So a broker runs with more Ps than
// cores: the cores stay busy while Ps sit in those calls.
//
// Measured (make bench's capacity test, 2 cores, 8 connections × 8
// partitions, batch 50, two rounds each, main binary at its default
// against the same binary with more Ps): acks=all 0.71–0.80 M msg/s at 2
// Ps, 1.01–1.04 M at 4 and 8 (1.27–1.38×); acks=1 and the single-connection
// and single-producer rows unchanged within the machine's noise.
//
// On a large machine doubling adds more Ps than there are calls to block
// them (broker/log runs at most max(16, 4 × cores) fsyncs at once), so at
// most extraProcs are added.
const extraProcs = 16

// raiseProcsForBlockingIO doubles GOMAXPROCS (adding at most extraProcs)
// unless the operator chose it with the GOMAXPROCS environment variable,
// which is left alone. The default it doubles follows a container's CPU
// limit as the process starts; once set, the runtime no longer follows
// later changes of that limit (a container resized while the broker runs
// keeps the Ps it started with).
func raiseProcsForBlockingIO() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	n := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(n + min(n, extraProcs))
	slog.Debug("GOMAXPROCS raised for blocking file I/O", "cores", n, "gomaxprocs", runtime.GOMAXPROCS(0))
}
