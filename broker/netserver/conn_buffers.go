package netserver

import (
	"math/bits"
	"sync"
)

// Produce request frames are the broker's largest allocation by far: a
// producer sending batches of 50 200-byte records allocates 10 KB per
// request, which at a few thousand requests per second is most of the
// garbage the broker makes. Frames of up to maxPooledFrame bytes are
// therefore read into buffers taken from size-class pools, and a Produce
// request's buffer goes back to its pool once its response is written
// (finish): the produce path copies what it keeps (the log writes the
// batches, kmsg copies strings), so nothing refers to the frame by then.
// Other requests' frames are left to the garbage collector, since their
// handlers may keep slices of them (group metadata, assignments).
//
// A pooled buffer is at most twice its frame's size, and sync.Pool drops
// idle buffers at garbage collection, so the request budget still bounds
// the memory requests hold.
const (
	minPooledFrame = 1 << 10
	maxPooledFrame = readChunk
	frameClasses   = 7 // 1 KB, 2 KB, ... 64 KB
)

var framePools [frameClasses]sync.Pool

// frameClass is the index of the smallest class holding size bytes, or -1
// when frames of that size are not pooled.
func frameClass(size int) int {
	if size > maxPooledFrame {
		return -1
	}
	if size <= minPooledFrame {
		return 0
	}
	return bits.Len(uint(size-1)) - bits.Len(uint(minPooledFrame-1))
}

// getFrame returns an empty buffer with room for size bytes, from a pool
// when frames of that size are pooled.
func getFrame(size int) []byte {
	c := frameClass(size)
	if c < 0 {
		return make([]byte, 0, min(size, readChunk))
	}
	if b, ok := framePools[c].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, minPooledFrame<<c)
}

// putFrame gives a buffer from getFrame back for reuse. The caller must
// hold no reference to it, nor to any slice of it.
func putFrame(b []byte) {
	c := frameClass(cap(b))
	if c < 0 || cap(b) != minPooledFrame<<c {
		return // not one of ours (a grown or unpooled buffer)
	}
	b = b[:0]
	framePools[c].Put(&b)
}
