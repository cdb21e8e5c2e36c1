package mutate

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// diffContext is the lines of context a hunk shows around a change.
const diffContext = 2

// maxDiffCells bounds the line-by-line table a diff builds: larger files
// are reported as changed, with their line counts.
const maxDiffCells = 4 << 20

// Diff is the unified diff from the skill's files to the mutant's, file by
// file in path order, as `diff -u` would print it with two lines of
// context.
func Diff(sk Skill, m Mutant) string {
	var b strings.Builder
	paths := slices.Sorted(maps.Keys(sk.Files))
	for p := range m.Files {
		if _, ok := sk.Files[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		a, inA := sk.Files[p]
		c, inC := m.Files[p]
		switch {
		case inA && !inC:
			fmt.Fprintf(&b, "--- a/%s\n+++ /dev/null\n", p)
			writeHunks(&b, lines(a.Data), nil)
		case !inA && inC:
			fmt.Fprintf(&b, "--- /dev/null\n+++ b/%s\n", p)
			writeHunks(&b, nil, lines(c.Data))
		case bytes.Equal(a.Data, c.Data) && a.Mode == c.Mode:
		default:
			fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", p, p)
			writeHunks(&b, lines(a.Data), lines(c.Data))
		}
	}
	return b.String()
}

// lines splits a file into lines, each with its newline.
func lines(data []byte) []string {
	out := strings.SplitAfter(string(data), "\n")
	if len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// edit is one line of a diff: ' ', '-' or '+', and the line.
type edit struct {
	op   byte
	text string
}

// edits is the shortest line edit from a to b (a longest common
// subsequence), or nil when the table would be too large.
func edits(a, b []string) []edit {
	if len(a)*len(b) > maxDiffCells {
		return nil
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []edit
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, edit{' ', a[i]})
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] > lcs[i+1][j]):
			out = append(out, edit{'+', b[j]})
			j++
		default:
			out = append(out, edit{'-', a[i]})
			i++
		}
	}
	return out
}

// writeHunks writes the hunks that turn a into b.
func writeHunks(w *strings.Builder, a, b []string) {
	es := edits(a, b)
	if es == nil && (len(a) > 0 || len(b) > 0) {
		fmt.Fprintf(w, "(%d lines → %d lines; too large to diff)\n", len(a), len(b))
		return
	}
	for start := 0; start < len(es); {
		// The next change, and the hunk around it.
		first := slices.IndexFunc(es[start:], func(e edit) bool { return e.op != ' ' })
		if first < 0 {
			return
		}
		first += start
		from := max(first-diffContext, start)
		to := first
		for k := first; k < len(es); k++ {
			if es[k].op != ' ' {
				to = k + 1
				continue
			}
			if k-to >= 2*diffContext {
				break
			}
		}
		to = min(to+diffContext, len(es))
		aLine, bLine := 1, 1
		for _, e := range es[:from] {
			if e.op != '+' {
				aLine++
			}
			if e.op != '-' {
				bLine++
			}
		}
		var aN, bN int
		for _, e := range es[from:to] {
			if e.op != '+' {
				aN++
			}
			if e.op != '-' {
				bN++
			}
		}
		fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(aLine, aN), hunkRange(bLine, bN))
		for _, e := range es[from:to] {
			w.WriteByte(e.op)
			w.WriteString(e.text)
			if !strings.HasSuffix(e.text, "\n") {
				w.WriteString("\n\\ No newline at end of file\n")
			}
		}
		start = to
	}
}

// hunkRange is a hunk header's range: "l,n", with an empty range's line
// the one before it, as diff -u writes it.
func hunkRange(line, n int) string {
	if n == 0 {
		line--
	}
	if n == 1 {
		return fmt.Sprint(line)
	}
	return fmt.Sprintf("%d,%d", line, n)
}
