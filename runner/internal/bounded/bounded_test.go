package bounded

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestForEachBound(t *testing.T) {
	var now, most atomic.Int32
	items := make([]int, 20)
	ForEach(context.Background(), 3, items, func(int) {
		n := now.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		now.Add(-1)
	})
	if most.Load() != 3 {
		t.Errorf("at most %d at once, want 3", most.Load())
	}
}

func TestForEachStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	ForEach(ctx, 1, make([]int, 10), func(int) {
		if calls.Add(1) == 2 {
			cancel()
		}
	})
	if calls.Load() != 2 {
		t.Errorf("%d calls after cancel at the second, want 2", calls.Load())
	}
	calls.Store(0)
	ForEach(context.Background(), 0, make([]int, 4), func(int) { calls.Add(1) })
	if calls.Load() != 4 {
		t.Errorf("jobs 0: %d calls, want 4", calls.Load())
	}
}

func TestBuffer(t *testing.T) {
	b := NewBuffer(5)
	b.Write([]byte("abc"))
	b.Write([]byte("defgh"))
	if string(b.Bytes()) != "abcde" || b.Total() != 8 || !b.Cut() {
		t.Errorf("kept %q of %d, cut %v", b.Bytes(), b.Total(), b.Cut())
	}
	if e := NewBuffer(5); e.Cut() || len(e.Bytes()) != 0 {
		t.Error("an empty buffer is cut")
	}
}
