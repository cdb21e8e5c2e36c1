package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// TestShortLivedHeapPacing holds a live heap past half the soft limit and
// sees the collector's default pacing come back after a collection, so a
// large suite is not collected continuously.
func TestShortLivedHeapPacing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	shortLivedHeap(64 << 20)
	if gogc, _ := pacing(); gogc == 100 {
		t.Fatalf("GOGC is 100 before any collection, want collection off")
	}
	live := make([][]byte, 48)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the finalizer runs in its own goroutine
		if gogc, limit := pacing(); gogc == 100 && limit == math.MaxInt64 {
			runtime.KeepAlive(live)
			return
		}
	}
	gogc, limit := pacing()
	t.Fatalf("with 48 MiB live past a 64 MiB soft limit's half: GOGC %d, memory limit %d; want 100 and none", gogc, limit)
}

// pacing is the collector's GOGC and memory limit.
func pacing() (gogc, limit uint64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}
