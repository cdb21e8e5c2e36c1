package runner

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress reports cells as they finish: a redrawn bar on a terminal,
// one plain line per cell otherwise (logs, CI).
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	total   int
	done    int
	running int
	start   time.Time
	last    string
}

func newProgress(w io.Writer, tty bool, total int) *progress {
	return &progress{w: w, tty: tty, total: total, start: time.Now()}
}

func (p *progress) started(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running++
	p.draw()
}

func (p *progress) finished(id string, r *Rollout) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running--
	p.done++
	line := fmt.Sprintf("%s %s in %.2fs", id, r.Status, r.Durations.Total)
	if r.Error != "" {
		line += ": " + r.Error
	}
	if p.tty {
		p.last = line
		if r.Status == StatusInvalid {
			fmt.Fprintf(p.w, "\r\033[K%s\n", line)
		}
		p.draw()
		return
	}
	fmt.Fprintf(p.w, "[%d/%d] %s\n", p.done, p.total, line)
}

func (p *progress) draw() {
	if !p.tty {
		return
	}
	const width = 30
	filled := 0
	if p.total > 0 {
		filled = width * p.done / p.total
	}
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
	fmt.Fprintf(p.w, "\r\033[K[%s] %d/%d cells, %d running, %s  %s", bar, p.done, p.total, p.running, time.Since(p.start).Round(time.Second), p.last)
}

func (p *progress) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintln(p.w)
	}
}
