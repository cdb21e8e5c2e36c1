// Package bounded holds the runner's two bounds on what it does at once and
// keeps: a loop that runs at most N calls at a time, and a buffer that keeps
// at most N bytes of an output. Every part of the runner (cells, checks,
// judge calls, hashing, the Docker and Kubernetes backends) uses these, so
// a bound is written and tested once.
package bounded

import (
	"context"
	"sync"

	"golang.org/x/sync/errgroup"
)

// ForEach calls fn on items with at most jobs at once (at least one), and
// hands out no more items once ctx is done; it returns when every call it
// started has returned.
func ForEach[T any](ctx context.Context, jobs int, items []T, fn func(T)) {
	var g errgroup.Group
	g.SetLimit(max(jobs, 1))
	for _, it := range items {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if ctx.Err() == nil {
				fn(it)
			}
			return nil
		})
	}
	g.Wait()
}

// Buffer keeps the first limit bytes written to it and counts the rest, so
// a runaway output cannot fill the memory. Writers may share it.
type Buffer struct {
	mu    sync.Mutex
	limit int64
	buf   []byte
	total int64
}

// NewBuffer is a Buffer that keeps at most limit bytes.
func NewBuffer(limit int64) *Buffer { return &Buffer{limit: limit} }

// Write keeps what fits under the limit and counts all of p.
func (c *Buffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.limit - int64(len(c.buf)); room > 0 {
		c.buf = append(c.buf, p[:min(room, int64(len(p)))]...)
	}
	return len(p), nil
}

// Bytes are the bytes kept: the first limit written.
func (c *Buffer) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf
}

// Total is how many bytes were written, kept or not.
func (c *Buffer) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Cut reports whether more was written than kept.
func (c *Buffer) Cut() bool { return c.Total() > int64(len(c.Bytes())) }
