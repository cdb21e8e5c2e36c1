package grade

import (
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/skillgate/skillgate/pipeline/suite"
)

var (
	graphHeading = regexp.MustCompile(`(?m)^(#{1,6})[ \t]+(.+?)` + pyS + `*#*` + pyS + `*$`)
	sliceTitle   = regexp.MustCompile(`\A(\p{Nd}+)\.` + pyS + `+.+\z`)
	taskIDLine   = regexp.MustCompile("(?m)^\\*\\*Task ID:\\*\\*" + pyS + "*`([^`]+)`" + pyS + "*$")
	dependsLine  = regexp.MustCompile(`(?m)^\*\*Depends on:\*\*` + pyS + `*(.*?)` + pyS + `*$`)
	dependencyID = regexp.MustCompile("`([A-Za-z0-9][A-Za-z0-9._-]*)`")
	validTaskID  = regexp.MustCompile(`\A[A-Za-z0-9][A-Za-z0-9._-]*\z`)
)

// TaskGraphFailures reads the task graph of the Markdown plan md, as
// chrisbanes/skills' text validator does, and returns what is wrong with
// it against tg, each as their validator words it; none when it holds.
func TaskGraphFailures(md string, tg suite.TaskGraphCheck) []string {
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	text := maskFencedCode(md)
	headings := graphHeading.FindAllStringSubmatchIndex(text, -1)
	title := func(h []int) string { return text[h[4]:h[5]] }
	level := func(h []int) int { return h[3] - h[2] }
	var sections [][]int
	for _, h := range headings {
		if strings.EqualFold(pyStrip(title(h)), "implementation slices") {
			sections = append(sections, h)
		}
	}
	if len(sections) != 1 {
		return []string{fmt.Sprintf("expected one Implementation slices section, found %d", len(sections))}
	}
	section := sections[0]
	end := len(text)
	var boundary []int
	for _, h := range headings {
		if h[0] > section[0] && level(h) <= level(section) {
			boundary, end = h, h[0]
			break
		}
	}
	if boundary != nil && !strings.EqualFold(pyStrip(title(boundary)), "acceptance coverage") {
		fail("unexpected section boundary after Implementation slices: %s", pyRepr(pyStrip(title(boundary))))
	}
	var slicesOf [][]int
	for _, h := range headings {
		if section[1] < h[0] && h[0] < end {
			if level(h) != level(section)+1 {
				fail("unexpected heading level in Implementation slices: %s", pyRepr(title(h)))
				continue
			}
			slicesOf = append(slicesOf, h)
		}
	}
	if len(slicesOf) == 0 {
		return []string{"task graph has no implementation slices"}
	}
	tasks := map[string]map[string]bool{}
	bodies := map[string]string{}
	var order []string
	expected := big.NewInt(1)
	for i, h := range slicesOf {
		t := pyStrip(title(h))
		m := sliceTitle.FindStringSubmatch(t)
		if m == nil {
			fail("malformed implementation slice heading %s", pyRepr(t))
			continue
		}
		n := digitsValue(m[1])
		if n.Cmp(expected) != 0 {
			fail("expected implementation slice %s, found %s", expected, m[1])
		}
		expected = new(big.Int).Add(n, big.NewInt(1))
		bodyEnd := end
		if i+1 < len(slicesOf) {
			bodyEnd = slicesOf[i+1][0]
		}
		body := text[h[1]:bodyEnd]
		ids := taskIDLine.FindAllStringSubmatch(body, -1)
		deps := dependsLine.FindAllStringSubmatch(body, -1)
		if len(ids) != 1 || len(deps) != 1 {
			fail("slice %d must declare exactly one Task ID and Depends on list", i+1)
			continue
		}
		id := ids[0][1]
		switch {
		case !validTaskID.MatchString(id):
			fail("invalid task ID %s", pyRepr(id))
			continue
		case strings.EqualFold(id, "none"):
			fail("task ID 'none' is reserved for the root dependency marker")
			continue
		case tasks[id] != nil:
			fail("duplicate task ID %s", pyRepr(id))
			continue
		}
		raw := deps[0][1]
		var list []string
		if raw != "`none`" {
			for _, d := range dependencyID.FindAllStringSubmatch(raw, -1) {
				list = append(list, d[1])
			}
			var want []string
			for _, d := range list {
				want = append(want, "`"+d+"`")
			}
			if len(list) == 0 || raw != strings.Join(want, ", ") {
				fail("malformed dependency list for task %s", pyRepr(id))
				continue
			}
		}
		set := map[string]bool{}
		for _, d := range list {
			set[d] = true
		}
		if len(set) != len(list) {
			fail("task %s repeats a dependency", pyRepr(id))
		}
		tasks[id] = set
		bodies[id] = body
		order = append(order, id)
	}
	for _, id := range order {
		for _, d := range sortedSet(tasks[id]) {
			switch {
			case strings.EqualFold(d, "none"):
				fail("task ID 'none' is reserved for the root dependency marker")
			case tasks[d] == nil:
				fail("task %s depends on undeclared task %s", pyRepr(id), pyRepr(d))
			}
		}
	}
	for _, e := range tg.RequiredEdges {
		if !tasks[e[0]][e[1]] {
			fail("missing required dependency edge %s -> %s", pyRepr(e[0]), pyRepr(e[1]))
		}
	}
	failures = append(failures, separateSliceFailures(tg, order, tasks, bodies)...)
	if tg.Acyclic && cyclic(tasks) {
		fail("task dependency graph contains a cycle")
	}
	return failures
}

// cyclic reports whether a dependency cycle joins declared tasks.
func cyclic(tasks map[string]map[string]bool) bool {
	const visiting, done = 1, 2
	state := map[string]int{}
	var visit func(string) bool
	visit = func(id string) bool {
		switch state[id] {
		case visiting:
			return true
		case done:
			return false
		}
		state[id] = visiting
		for d := range tasks[id] {
			if tasks[d] != nil && visit(d) {
				return true
			}
		}
		state[id] = done
		return false
	}
	for id := range tasks {
		if visit(id) {
			return true
		}
	}
	return false
}

// digitsValue is the value of a run of decimal digits of any script, as
// Python's int() reads it.
func digitsValue(s string) *big.Int {
	n := new(big.Int)
	ten := big.NewInt(10)
	for _, r := range s {
		zero := r
		// Digits come in runs of whole tens from a zero.
		for unicode.IsDigit(zero - 1) {
			zero--
		}
		n.Mul(n, ten).Add(n, big.NewInt(int64((r-zero)%10)))
	}
	return n
}

// pyRepr quotes s as Python's repr does for the plain texts of these
// messages.
func pyRepr(s string) string {
	q := "'"
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = `"`
	}
	r := strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	s = r.Replace(s)
	if q == "'" {
		s = strings.ReplaceAll(s, "'", `\'`)
	}
	return q + s + q
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
