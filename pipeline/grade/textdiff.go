package grade

import (
	"fmt"
	"path"
	"strings"
)

// lines of context; "" when they are equal. A file that did not exist
// before (after) is /dev/null on that side.
func UnifiedDiff(name, before, after string, hadBefore, hasAfter bool) string {
	if before == after && hadBefore == hasAfter {
		return ""
	}
	a, b := diffLines(before), diffLines(after)
	from, to := "a/"+path.Clean(name), "b/"+path.Clean(name)
	if !hadBefore {
		from = "/dev/null"
	}
	if !hasAfter {
		to = "/dev/null"
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	ops := editScript(a, b)
	const context = 3
	// Group the edit script into hunks: changes with up to 2×context equal
	// lines between them share a hunk.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-context)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(len(ops), end+context)
				break
			}
			end = run
		}
		var aStart, aLen, bStart, bLen int
		aStart, bStart = ops[start].a+1, ops[start].b+1
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				aLen++
			}
			if op.kind != '-' {
				bLen++
			}
		}
		if aLen == 0 {
			aStart--
		}
		if bLen == 0 {
			bStart--
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, op := range ops[start:end] {
			out.WriteByte(op.kind)
			out.WriteString(op.line)
			out.WriteByte('\n')
			if op.noEOL {
				out.WriteString("\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

type diffLine struct {
	text  string
	noEOL bool
}

func diffLines(s string) []diffLine {
	if s == "" {
		return nil
	}
	parts := strings.SplitAfter(s, "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	out := make([]diffLine, len(parts))
	for i, p := range parts {
		t, nl := strings.CutSuffix(p, "\n")
		out[i] = diffLine{text: t, noEOL: !nl}
	}
	return out
}

// diffOp is one line of an edit script: ' ' kept, '-' removed, '+' added;
// a and b are its line indexes before and after (of the next line when
// the op does not consume one on that side).
type diffOp struct {
	kind  byte
	line  string
	noEOL bool
	a, b  int
}

// diffCells bounds the LCS table; past it the differing middle is shown
// as removed whole and added whole.
const diffCells = 4 << 20

// editScript is a shortest edit script by longest common subsequence over
// the lines between the common prefix and suffix.
func editScript(a, b []diffLine) []diffOp {
	var ops []diffOp
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		ops = append(ops, diffOp{kind: ' ', line: a[pre].text, noEOL: a[pre].noEOL, a: pre, b: pre})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(ma), len(mb)
	if n*m <= diffCells && n > 0 && m > 0 {
		// lcs[i][j] is the LCS length of ma[i:] and mb[j:].
		lcs := make([]int32, (n+1)*(m+1))
		at := func(i, j int) int32 { return lcs[i*(m+1)+j] }
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i*(m+1)+j] = at(i+1, j+1) + 1
				} else {
					lcs[i*(m+1)+j] = max(at(i+1, j), at(i, j+1))
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				ops = append(ops, diffOp{kind: ' ', line: ma[i].text, noEOL: ma[i].noEOL, a: pre + i, b: pre + j})
				i, j = i+1, j+1
			case i < n && (j == m || at(i+1, j) >= at(i, j+1)):
				ops = append(ops, diffOp{kind: '-', line: ma[i].text, noEOL: ma[i].noEOL, a: pre + i, b: pre + j})
				i++
			default:
				ops = append(ops, diffOp{kind: '+', line: mb[j].text, noEOL: mb[j].noEOL, a: pre + i, b: pre + j})
				j++
			}
		}
	} else {
		for i, l := range ma {
			ops = append(ops, diffOp{kind: '-', line: l.text, noEOL: l.noEOL, a: pre + i, b: pre})
		}
		for j, l := range mb {
			ops = append(ops, diffOp{kind: '+', line: l.text, noEOL: l.noEOL, a: pre + n, b: pre + j})
		}
	}
	for k := 0; k < suf; k++ {
		ia, ib := len(a)-suf+k, len(b)-suf+k
		ops = append(ops, diffOp{kind: ' ', line: a[ia].text, noEOL: a[ia].noEOL, a: ia, b: ib})
	}
	return ops
}
