package bench

import (
	"context"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Ceiling is what the machine itself allows, for reading the other figures:
// a broker on loopback cannot move data faster than loopback TCP, nor
// persist it faster than the disk writes sequentially; and an acks=all
// request that waits on its own fsync cannot be answered sooner than an
// append and its fdatasync take.
type Ceiling struct {
	LoopbackMBPerSec  float64 `json:"loopback_mb_per_sec"`
	DiskMBPerSec      float64 `json:"disk_write_mb_per_sec"`
	AppendFsyncMicros float64 `json:"append_fsync_us"`
}

// MeasureCeiling measures loopback TCP throughput (one connection, 256 KiB
// writes, ~2 s), sequential write speed of dir's file system (256 MiB in
// 1 MiB writes, then fdatasync, timed together), and the mean of 500
// appends of appendFsyncBytes each followed by fdatasync.
func MeasureCeiling(ctx context.Context, dir string) (*Ceiling, error) {
	lo, err := loopbackMBPerSec(ctx, 2*time.Second)
	if err != nil {
		return nil, err
	}
	disk, err := diskMBPerSec(dir, 256<<20)
	if err != nil {
		return nil, err
	}
	appendSync, err := appendFsyncMicros(dir, 500)
	if err != nil {
		return nil, err
	}
	return &Ceiling{LoopbackMBPerSec: lo, DiskMBPerSec: disk, AppendFsyncMicros: appendSync}, nil
}

// appendFsyncBytes is one capacity request's batch: 50 records of 200 bytes.
const appendFsyncBytes = capacityBatch * MessageSize

func loopbackMBPerSec(ctx context.Context, dur time.Duration) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.Copy(io.Discard, c)
		c.Close()
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	defer c.Close()
	buf := make([]byte, 256<<10)
	var n int64
	start := time.Now()
	for time.Since(start) < dur && ctx.Err() == nil {
		w, err := c.Write(buf)
		n += int64(w)
		if err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds() / 1e6, nil
}

// diskMBPerSec writes size bytes into a new file of dir in 1 MiB writes,
// then fdatasync, and returns the rate.
func diskMBPerSec(dir string, size int) (float64, error) {
	const block = 1 << 20
	took, err := timeWrites(dir, block, size/block, false)
	if err != nil {
		return 0, err
	}
	return float64(size/block*block) / took.Seconds() / 1e6, nil
}

// appendFsyncMicros appends n blocks of appendFsyncBytes to a new file of
// dir, each followed by fdatasync, as a log answering one acks=all request
// at a time does, and returns the mean time of one, in µs.
func appendFsyncMicros(dir string, n int) (float64, error) {
	took, err := timeWrites(dir, appendFsyncBytes, n, true)
	if err != nil {
		return 0, err
	}
	return float64(took.Microseconds()) / float64(n), nil
}

// timeWrites times count writes of block bytes into a new file of dir,
// removed afterwards, with an fdatasync after each write (eachSynced) or
// after the last.
func timeWrites(dir string, block, count int, eachSynced bool) (time.Duration, error) {
	f, err := os.CreateTemp(dir, "ceiling-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, block)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	start := time.Now()
	for i := range count {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
		if eachSynced || i == count-1 {
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(start), nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
