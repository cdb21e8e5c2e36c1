package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// softHeapLimit is the heap a short-lived command grows to before its first
// collection.
const softHeapLimit = 1 << 30

// shortLivedHeap turns collection off below limit (softHeapLimit), and
// after every collection reads the live heap: once it passes half the
// limit, Go's default pacing (GOGC=100, no limit) is back for the rest of the process.
// A limit alone makes the collector run continuously once the live heap is
// past it, each cycle marking the whole heap to free almost nothing, which
// made vet's time grow with the square of a large suite; from half the
// limit on, every cycle frees at least as much as it marks, and the time
// spent collecting stays in proportion to what is allocated.
func shortLivedHeap(limit int64) {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(limit)
	armHeapWatch(limit)
}

// heapSentinel is an object whose finalizer runs after the collection that
// finds it unreachable: once per cycle, as each one arms the next.
type heapSentinel struct{ _ *byte }

func armHeapWatch(limit int64) {
	runtime.SetFinalizer(&heapSentinel{}, func(*heapSentinel) {
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(live)
		if live[0].Value.Kind() == metrics.KindUint64 && live[0].Value.Uint64() > uint64(limit/2) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			return
		}
		armHeapWatch(limit)
	})
}
