package runner

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/skillgate/skillgate/runner/store"

	"golang.org/x/sys/unix"
)

// The phases of a run, each with its own progress line.
const (
	phaseImages  = "images"
	phaseCells   = "cells"
	phaseGrading = "grading"
	phaseJudging = "judging"
)

// progress reports a phase of a run on stderr. On a terminal it is one line
// redrawn in place every second, never wider than the terminal: the phase,
// its counts, a clock, an estimate of the time left from the finished
// cells, the tally of their outcomes, and the last thing that happened;
// when the phase ends the line stays as its summary. Elsewhere (logs, CI)
// it prints plain lines: one per finished cell and one per phase's end.
//
// It is also an io.Writer: lines written to it (image builds, the judge's
// notes) are printed above the live line rather than through it.
type progress struct {
	mu  sync.Mutex
	w   io.Writer
	tty bool
	// columns is the terminal's width, 0 when unknown; now is the clock.
	columns func() int
	now     func() time.Time
	// every is how often the live line is redrawn.
	every time.Duration

	phase   string
	total   int // the phase's units, 0 when not known ahead
	done    int
	running int
	tally   map[string]int // finished cells by status
	start   time.Time
	note    string // the last thing that happened
	partial []byte // Write's unfinished line
	drawn   bool   // a live line is on the terminal
	stop    chan struct{}
}

func newProgress(w io.Writer, tty bool, total int) *progress {
	p := &progress{w: w, tty: tty, columns: func() int { return terminalWidth(w) }, now: time.Now, every: time.Second}
	p.reset(phaseCells, total)
	return p
}

// startPhase is the progress line of a phase that has no counts of its
// own, such as grading; its log lines should be written to it.
func startPhase(opts Options, phase string) *progress {
	w := opts.Log
	if w == nil {
		w = io.Discard
	}
	p := newProgress(w, opts.Terminal, 0)
	p.reset(phase, 0)
	p.mu.Lock()
	p.draw()
	p.mu.Unlock()
	return p
}

// logTo is opts with its log going through the progress line.
func (p *progress) logTo(opts Options) Options {
	opts.Log = p
	return opts
}

func (p *progress) reset(phase string, total int) {
	p.phase, p.total, p.done, p.running = phase, total, 0, 0
	p.tally = map[string]int{}
	p.start = p.now()
	p.note = ""
}

// begin ends the current phase, leaving its summary line, and starts
// another with total units.
func (p *progress) begin(phase string, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finish("")
	p.reset(phase, total)
	p.draw()
}

// judged counts the judge calls ended: done of total (judge.Options'
// Progress).
func (p *progress) judged(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.phase == phaseJudging {
		p.done, p.total = done, total
	}
	p.draw()
}

// step counts one unit of the phase done.
func (p *progress) step() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.draw()
}

func (p *progress) started(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running++
	p.draw()
}

func (p *progress) finished(id string, r *store.Rollout) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running--
	p.done++
	p.tally[outcome(r.Status)]++
	line := fmt.Sprintf("%s %s in %.2fs", id, r.Status, r.Durations.Total)
	if r.Error != "" {
		line += ": " + r.Error
	}
	if !p.tty {
		fmt.Fprintf(p.w, "[%d/%d] %s\n", p.done, p.total, line)
		return
	}
	p.note = line
	if r.Status == store.StatusInvalid {
		p.above(line) // kept on screen: a cell skillgate could not run
	}
	p.draw()
}

// end closes a phase started with startPhase: its summary, format with the
// count of units, is printed when the count is positive.
func (p *progress) end(n int, format string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	summary := ""
	if n > 0 {
		summary = fmt.Sprintf(format, n) + " in " + seconds(p.now().Sub(p.start))
	}
	p.finish(summary)
	p.phase = ""
}

func (p *progress) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finish("")
	p.phase = ""
}

// finish leaves the phase's summary on a line of its own (the given one,
// else its final state) and stops the clock.
func (p *progress) finish(summary string) {
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	if len(p.partial) > 0 {
		p.emit(string(p.partial))
		p.partial = nil
	}
	if summary == "" && p.phase != phaseGrading && p.phase != phaseJudging && (p.drawn || !p.tty && p.phase == phaseImages && p.total > 0) {
		summary = p.summary()
	}
	switch {
	case p.tty && summary != "":
		fmt.Fprintf(p.w, "\r\033[K%s\n", fit(summary, p.width()))
	case p.tty && p.drawn:
		fmt.Fprint(p.w, "\r\033[K")
	case summary != "":
		fmt.Fprintln(p.w, summary)
	}
	p.drawn = false
}

// Write prints whole lines above the live line, and keeps the last as the
// phase's note.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := strings.IndexByte(string(p.partial), '\n')
		if i < 0 {
			break
		}
		line := string(p.partial[:i])
		p.partial = p.partial[i+1:]
		p.emit(line)
	}
	if p.tty && p.drawn {
		p.draw()
	}
	return len(b), nil
}

// emit prints one log line.
func (p *progress) emit(line string) {
	if !p.tty {
		fmt.Fprintln(p.w, line)
		return
	}
	p.note = strings.TrimSpace(line)
	p.above(line)
}

// above prints a line above the live one.
func (p *progress) above(line string) {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
	fmt.Fprintln(p.w, line)
}

// draw redraws the live line and keeps the clock going.
func (p *progress) draw() {
	if !p.tty || p.phase == "" {
		return
	}
	fmt.Fprint(p.w, "\r\033[K"+p.line(p.now(), p.width()))
	p.drawn = true
	if p.stop == nil {
		p.stop = make(chan struct{})
		go p.tick(p.stop)
	}
}

// tick redraws every second, so the clock moves while nothing finishes.
func (p *progress) tick(stop chan struct{}) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.stop == stop {
				p.draw()
			}
			p.mu.Unlock()
		}
	}
}

func (p *progress) width() int {
	if n := p.columns(); n > 0 {
		return n
	}
	return 80
}

// segment is one part of the live line. As the terminal narrows, the part
// whose next step has the highest rank takes it: to its next shorter form,
// else out of the line.
type segment struct {
	text string
	rank int
	// shorter are shorter forms of text, each with the rank at which it is
	// taken.
	shorter []shortForm
}

type shortForm struct {
	text string
	rank int
}

// next is the rank of the segment's next step.
func (s segment) next() int {
	if len(s.shorter) > 0 {
		return s.shorter[0].rank
	}
	return s.rank
}

// line is the live line at now for a terminal of width columns: never
// more than width-1 runes, so it never wraps.
func (p *progress) line(now time.Time, width int) string {
	elapsed := now.Sub(p.start)
	var segs []segment
	head := p.phase
	if p.total > 0 {
		head = fmt.Sprintf("%s %d/%d", p.phase, p.done, p.total)
	} else if p.done > 0 {
		head = fmt.Sprintf("%s %d", p.phase, p.done)
	}
	segs = append(segs, segment{text: head})
	if p.total > 0 {
		segs = append(segs, segment{text: bar(p.done, p.total, 20), rank: 50, shorter: []shortForm{{bar(p.done, p.total, 10), 55}}})
	}
	segs = append(segs, segment{text: clock(elapsed), rank: 10})
	if eta, ok := p.eta(elapsed); ok {
		segs = append(segs, segment{text: "~" + clock(eta) + " left", rank: 30})
	}
	if p.phase == phaseCells {
		segs = append(segs, p.tallySegment())
		if p.running > 0 {
			segs = append(segs, segment{text: fmt.Sprintf("%d running", p.running), rank: 40})
		}
	}
	if p.note != "" {
		segs = append(segs, segment{text: p.note, rank: rankNote})
	}
	return fitSegments(segs, width)
}

// eta estimates the time left from the pace of the units done so far.
func (p *progress) eta(elapsed time.Duration) (time.Duration, bool) {
	if p.done == 0 || p.total == 0 || p.done >= p.total {
		return 0, false
	}
	return time.Duration(float64(elapsed) / float64(p.done) * float64(p.total-p.done)), true
}

// rankNote is the note's rank: the first part to go, cut before it goes.
const rankNote = 60

// tallyText counts the finished cells' outcomes.
func (p *progress) tallyText() string { return p.tallySegment().text }

// tallySegment counts the finished cells' outcomes, with shorter forms for
// a narrow terminal.
func (p *progress) tallySegment() segment {
	ok, failed, invalid := p.tally[store.StatusCompleted], p.tally[store.StatusFailed], p.tally[store.StatusInvalid]
	return segment{text: fmt.Sprintf("%d completed, %d failed, %d invalid", ok, failed, invalid), rank: 20,
		shorter: []shortForm{{fmt.Sprintf("%d ok %d failed %d invalid", ok, failed, invalid), 45}, {fmt.Sprintf("%d✓ %d✗ %d!", ok, failed, invalid), 35}}}
}

// summary is the line a phase leaves when it ends, as wide as the terminal
// allows.
func (p *progress) summary() string {
	took := seconds(p.now().Sub(p.start))
	count := fmt.Sprintf("%d of %d", p.done, p.total)
	if p.done == p.total {
		count = strconv.Itoa(p.done)
	}
	switch p.phase {
	case phaseImages:
		return fmt.Sprintf("images: %s ready in %s", count, took)
	case phaseCells:
		return fitSegments([]segment{{text: fmt.Sprintf("cells: %s ran in %s", count, took)}, p.tallySegment()}, p.width())
	}
	return fmt.Sprintf("%s: %d in %s", p.phase, p.done, took)
}

// outcome groups a rollout's status for the tally: a timed-out or
// out-of-memory agent failed.
func outcome(status string) string {
	switch status {
	case store.StatusCompleted, store.StatusInvalid:
		return status
	}
	return store.StatusFailed
}

// fitSegments joins the segments that fit in width-1 columns, taking
// steps from the highest rank down; the note, last, is cut rather than
// dropped while it can keep a few words.
func fitSegments(segs []segment, width int) string {
	max := width - 1
	const sep = " · "
	segs = append([]segment(nil), segs...)
	for {
		var parts []string
		for _, s := range segs {
			parts = append(parts, s.text)
		}
		line := strings.Join(parts, sep)
		if utf8.RuneCountInString(line) <= max || len(segs) == 1 && len(segs[0].shorter) == 0 {
			return fit(line, width)
		}
		step := 0
		for i, s := range segs {
			if s.next() > segs[step].next() {
				step = i
			}
		}
		s := &segs[step]
		switch {
		case s.rank == rankNote && max-(utf8.RuneCountInString(line)-utf8.RuneCountInString(s.text)) >= 12:
			s.text = fit(s.text, max-(utf8.RuneCountInString(line)-utf8.RuneCountInString(s.text))+1)
		case len(s.shorter) > 0:
			s.text, s.shorter = s.shorter[0].text, s.shorter[1:]
		default:
			segs = append(segs[:step], segs[step+1:]...)
		}
	}
}

// fit cuts s to at most width-1 runes, marking a cut with "…", and keeps it
// on one line.
func fit(s string, width int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s)
	max := width - 1
	if max < 1 {
		return ""
	}
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

// bar is a progress bar of n columns.
func bar(done, total, n int) string {
	filled := n * done / total
	return "[" + strings.Repeat("=", filled) + strings.Repeat(" ", n-filled) + "]"
}

// clock is a duration as m:ss, or h:mm:ss past an hour.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// seconds is a duration as the summaries print it.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
}

// terminalWidth is the width of the terminal w writes to, else $COLUMNS,
// else 0.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	n, _ := strconv.Atoi(os.Getenv("COLUMNS"))
	return n
}
