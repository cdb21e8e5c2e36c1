package runner

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/skillgate/skillgate/runner/store"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testProgress is a progress line on a fake terminal of the given width
// (0: not a terminal) with a fake clock; every is an hour, so only the test
// redraws unless it says otherwise.
func testProgress(width, total int) (*progress, *bytes.Buffer, *fakeClock) {
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	p := &progress{w: &buf, tty: width > 0, columns: func() int { return width }, now: clock.now, every: time.Hour}
	p.reset(phaseCells, total)
	return p, &buf, clock
}

func rollout(status string, secs float64, msg string) *store.Rollout {
	r := &store.Rollout{Status: status, Error: msg}
	r.Durations.Total = secs
	return r
}

// drawnLines are the lines a terminal shows: what each \r\033[K redraw or
// each newline leaves.
func drawnLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		for _, part := range strings.Split(l, "\r\033[K") {
			if part != "" {
				lines = append(lines, part)
			}
		}
	}
	return lines
}

func TestProgressLineFitsEveryWidth(t *testing.T) {
	for _, width := range []int{1, 2, 5, 10, 16, 24, 40, 60, 80, 120, 200, 400} {
		p, _, clock := testProgress(width, 90)
		for i := 0; i < 30; i++ {
			p.running++
			p.done++
			p.tally[outcome([]string{store.StatusCompleted, store.StatusFailed, store.StatusInvalid}[i%3])]++
		}
		p.running = 8
		p.note = "a-rather-long-case-name/automatic/3 completed in 12.34s: " + strings.Repeat("detail ", 30)
		clock.advance(83 * time.Second)
		line := p.line(clock.now(), width)
		if n := utf8.RuneCountInString(line); n > max(width-1, 0) {
			t.Errorf("width %d: line of %d runes: %q", width, n, line)
		}
		if strings.ContainsAny(line, "\n\r") {
			t.Errorf("width %d: line breaks in %q", width, line)
		}
		if width >= 16 && !strings.HasPrefix(line, "cells 30/90") {
			t.Errorf("width %d: the counts go last, not first: %q", width, line)
		}
		if width >= 24 && !strings.Contains(line, "1:23") {
			t.Errorf("width %d: no clock in %q", width, line)
		}
		if width >= 200 {
			for _, want := range []string{"[======", "~2:46 left", "10 completed, 10 failed, 10 invalid", "8 running", "a-rather-long-case-name"} {
				if !strings.Contains(line, want) {
					t.Errorf("width %d: %q lacks %q", width, line, want)
				}
			}
		}
	}
}

func TestProgressETA(t *testing.T) {
	p, _, clock := testProgress(200, 10)
	if _, ok := p.eta(0); ok {
		t.Error("an estimate before any cell finished")
	}
	clock.advance(20 * time.Second)
	for i := 0; i < 4; i++ {
		p.finished(fmt.Sprintf("c/none/%d", i), rollout(store.StatusCompleted, 5, ""))
	}
	// 4 cells in 20 s: 6 more take 30 s.
	if eta, ok := p.eta(20 * time.Second); !ok || eta != 30*time.Second {
		t.Errorf("eta %v, %v; want 30s", eta, ok)
	}
	if line := p.line(clock.now(), 200); !strings.Contains(line, "~0:30 left") {
		t.Errorf("line %q lacks ~0:30 left", line)
	}
	for i := 4; i < 10; i++ {
		p.finished(fmt.Sprintf("c/none/%d", i), rollout(store.StatusCompleted, 5, ""))
	}
	if _, ok := p.eta(time.Minute); ok {
		t.Error("an estimate with every cell done")
	}
	if got := clockText(2*time.Hour + 3*time.Minute + 4*time.Second); got != "2:03:04" {
		t.Errorf("clock past an hour: %s", got)
	}
}

func clockText(d time.Duration) string { return clock(d) }

func TestProgressTally(t *testing.T) {
	p, _, _ := testProgress(200, 7)
	for i, st := range []string{store.StatusCompleted, store.StatusFailed, store.StatusCompleted, store.StatusTimeout, store.StatusOOM, store.StatusInvalid, store.StatusCompleted} {
		p.started(fmt.Sprint(i))
		p.finished(fmt.Sprintf("c/a/%d", i), rollout(st, 1, ""))
	}
	if got, want := p.tallyText(), "3 completed, 3 failed, 1 invalid"; got != want {
		t.Errorf("tally %q, want %q (a timeout and an out-of-memory agent failed)", got, want)
	}
	if got := p.summary(); !strings.HasPrefix(got, "cells: 7 ran in ") || !strings.HasSuffix(got, " · 3 completed, 3 failed, 1 invalid") {
		t.Errorf("summary %q", got)
	}
}

func TestProgressPlainWhenNotTerminal(t *testing.T) {
	p, buf, clock := testProgress(0, 3)
	p.begin(phaseImages, 2)
	fmt.Fprint(p, "building skillgate/claude-code:1\nbuilt ")
	fmt.Fprint(p, "skillgate/claude-code:1 in 12s\n")
	p.step()
	p.step()
	clock.advance(1500 * time.Millisecond)
	p.begin(phaseCells, 3)
	p.started("a/none/1")
	p.finished("a/none/1", rollout(store.StatusCompleted, 0.5, ""))
	p.finished("a/forced/1", rollout(store.StatusInvalid, 0.25, "build cell image: boom"))
	p.close()
	want := "building skillgate/claude-code:1\n" +
		"built skillgate/claude-code:1 in 12s\n" +
		"images: 2 ready in 1.5s\n" +
		"[1/3] a/none/1 completed in 0.50s\n" +
		"[2/3] a/forced/1 invalid in 0.25s: build cell image: boom\n"
	if got := buf.String(); got != want {
		t.Errorf("plain output:\n%s\nwant:\n%s", got, want)
	}
}

func TestProgressTerminalOneLineInPlace(t *testing.T) {
	const width = 40
	p, buf, clock := testProgress(width, 3)
	p.begin(phaseImages, 1)
	fmt.Fprintln(p, "fetching @anthropic-ai/claude-code@2.1.332 with npm pack, which takes a while")
	clock.advance(3 * time.Second)
	p.step()
	p.begin(phaseCells, 3)
	p.started("a/none/1")
	clock.advance(time.Second)
	p.finished("a/none/1", rollout(store.StatusCompleted, 1, ""))
	p.finished("a/forced/1", rollout(store.StatusInvalid, 1, "no such image"))
	p.finished("a/automatic/1", rollout(store.StatusFailed, 1, ""))
	p.close()
	out := buf.String()
	for _, l := range drawnLines(out) {
		if n := utf8.RuneCountInString(l); n > width-1 && !strings.HasPrefix(l, "fetching") && !strings.HasPrefix(l, "a/forced/1") {
			t.Errorf("a drawn line of %d runes, wider than the terminal: %q", n, l)
		}
	}
	// What stays on the screen: the log line, each phase's summary, and the
	// invalid cell; the live line itself never ends in a newline.
	var kept []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		parts := strings.Split(l, "\r\033[K")
		kept = append(kept, parts[len(parts)-1])
	}
	want := []string{
		"fetching @anthropic-ai/claude-code@2.1.332 with npm pack, which takes a while",
		"images: 1 ready in 3.0s",
		"a/forced/1 invalid in 1.00s: no such image",
		"cells: 3 ran in 1.0s · 1✓ 1✗ 1!",
	}
	if strings.Join(kept, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines left on the terminal:\n%s\nwant:\n%s\nraw: %q", strings.Join(kept, "\n"), strings.Join(want, "\n"), out)
	}
}

func TestProgressClockMovesWithoutEvents(t *testing.T) {
	p, buf, clock := testProgress(80, 5)
	p.every = 5 * time.Millisecond
	p.started("a/none/1")
	deadline := time.Now().Add(5 * time.Second)
	for {
		clock.advance(time.Second)
		time.Sleep(10 * time.Millisecond)
		p.mu.Lock()
		out := buf.String()
		p.mu.Unlock()
		if strings.Contains(out, "0:03") || time.Now().After(deadline) {
			break
		}
	}
	p.close()
	out := buf.String()
	if !strings.Contains(out, "0:03") {
		t.Fatalf("the clock did not move without a cell finishing: %q", out)
	}
	// Closed, it stops: nothing more is drawn.
	n := buf.Len()
	clock.advance(time.Minute)
	time.Sleep(30 * time.Millisecond)
	if buf.Len() != n {
		t.Errorf("drawn after close: %q", buf.String()[n:])
	}
}

func TestProgressPhaseWithoutCounts(t *testing.T) {
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Unix(0, 0)}
	p := &progress{w: &buf, tty: true, columns: func() int { return 60 }, now: clock.now, every: time.Hour}
	p.reset(phaseJudging, 0)
	p.mu.Lock()
	p.draw()
	p.mu.Unlock()
	fmt.Fprintln(p, "judging: 4 rubric judgements by the scripted judge (2 jobs)")
	p.judged(1, 4)
	fmt.Fprintln(p, "[judge 1/4] a/none/1 pass")
	if line := p.line(clock.now(), 60); !strings.HasPrefix(line, "judging 1/4") {
		t.Errorf("judging line %q does not count the judgements", line)
	}
	// The count is the event's, not the log's: a reworded line changes nothing.
	fmt.Fprintln(p, "[judge 3/4] a/none/2 pass")
	if line := p.line(clock.now(), 60); !strings.HasPrefix(line, "judging 1/4") {
		t.Errorf("judging line %q counts from the log text", line)
	}
	clock.advance(2 * time.Second)
	p.end(4, "judged %d")
	if !strings.HasSuffix(buf.String(), "\r\033[Kjudged 4 in 2.0s\n") {
		t.Errorf("judging ends %q", buf.String())
	}

	// Nothing graded: the live line goes and nothing is left.
	buf.Reset()
	g := &progress{w: &buf, tty: true, columns: func() int { return 60 }, now: clock.now, every: time.Hour}
	g.reset(phaseGrading, 0)
	g.mu.Lock()
	g.draw()
	g.mu.Unlock()
	g.end(0, "graded %d cells")
	if got := buf.String(); !strings.HasSuffix(got, "\r\033[K") || strings.Contains(got, "\n") {
		t.Errorf("grading nothing left %q", got)
	}
}
