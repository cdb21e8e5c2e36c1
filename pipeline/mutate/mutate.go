package mutate

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// Operators, as a suite's mutants.operators names them (schema
// #MutantOperator).
const (
	// Section deletes each top-level section of SKILL.md in turn.
	Section = "section"
	// Reference removes each file of the skill but SKILL.md in turn; its
	// mention in SKILL.md is left dangling.
	Reference = "reference"
	// EmptyBody empties SKILL.md's body and keeps its front matter.
	EmptyBody = "empty-body"
	// BlankDescription makes the description empty.
	BlankDescription = "blank-description"
	// SwapDescription gives the skill each other skill's description.
	SwapDescription = "swap-description"
	// CutDescription cuts the description to each target agent's budget
	// that it exceeds.
	CutDescription = "cut-description"
	// Invert turns a rule written on one line around: "must" becomes "must
	// not", "never" becomes "always", and back.
	Invert = "invert"
)

// Folder is the operator of a mutant written by hand (the suite's
// mutants.folders).
const Folder = "folder"

// Operators are every operator, in the order mutants are listed.
var Operators = []string{Section, Reference, EmptyBody, BlankDescription, SwapDescription, CutDescription, Invert}

// File is one file of a skill's tree; Mode is as plan.TreeEntry's ("",
// "exec" or "symlink", whose Data is the link's target).
type File struct {
	Data []byte
	Mode string
}

// Skill is a skill under test: its key in the suite and its files by
// slash-separated path.
type Skill struct {
	Key   string
	Files map[string]File
}

// Options say which mutants to derive.
type Options struct {
	// Operators to apply; empty applies none.
	Operators []string
	// Others are the other skills' descriptions by key, for SwapDescription.
	Others map[string]string
	// Budgets are description budgets in characters, by agent kind, for
	// CutDescription.
	Budgets map[string]int
}

// Mutant is a copy of a skill's tree with one part broken.
type Mutant struct {
	// ID names the mutant in the suite: OPERATOR or OPERATOR-WHAT, a
	// #Name, unique among the skill's mutants.
	ID string `json:"id"`
	// Skill is the key of the skill it mutates.
	Skill    string `json:"skill"`
	Operator string `json:"operator"`
	// What says what was done, in words.
	What string `json:"what"`
	// Section is the SKILL.md section a Section mutant deletes.
	Section string `json:"section,omitempty"`
	// Tree is the mutant's tree by content.
	Tree  plan.Tree       `json:"tree"`
	Files map[string]File `json:"-"`
}

// Derive derives a skill's mutants, in the order of Operators, then of
// their place in the skill. A mutant whose tree equals the skill's (an
// operator with nothing to change) is not one.
func Derive(sk Skill, opts Options) ([]Mutant, error) {
	md, ok := sk.Files["SKILL.md"]
	if !ok {
		return nil, fmt.Errorf("derive mutants of skill %s: no SKILL.md", sk.Key)
	}
	doc := parseSkillMD(string(md.Data))
	orig := TreeOf(sk.Files)
	var out []Mutant
	ids := map[string]int{}
	add := func(op, what, slug string, files map[string]File) bool {
		t := TreeOf(files)
		if t.Digest == orig.Digest {
			return false
		}
		id := op
		if slug != "" {
			id += "-" + slug
		}
		if ids[id]++; ids[id] > 1 {
			id += "-" + strconv.Itoa(ids[id])
		}
		out = append(out, Mutant{ID: id, Skill: sk.Key, Operator: op, What: what, Tree: t, Files: files})
		return true
	}
	withSkillMD := func(text string) map[string]File {
		files := maps.Clone(sk.Files)
		files["SKILL.md"] = File{Data: []byte(text), Mode: md.Mode}
		return files
	}
	for _, op := range Operators {
		if !slices.Contains(opts.Operators, op) {
			continue
		}
		switch op {
		case Section:
			for _, s := range sections(doc.body) {
				body := slices.Concat(doc.body[:s.from], doc.body[s.to:])
				if add(op, fmt.Sprintf("SKILL.md's section %q deleted", s.title), slug(s.title), withSkillMD(doc.render(doc.front, body))) {
					out[len(out)-1].Section = s.title
				}
			}
		case Reference:
			for _, p := range slices.Sorted(maps.Keys(sk.Files)) {
				if p == "SKILL.md" {
					continue
				}
				files := maps.Clone(sk.Files)
				delete(files, p)
				add(op, p+" removed (its mentions left)", slug(p), files)
			}
		case EmptyBody:
			add(op, "SKILL.md's body emptied, front matter kept", "", withSkillMD(doc.render(doc.front, nil)))
		case BlankDescription:
			if doc.front != nil {
				add(op, "the description blanked", "", withSkillMD(doc.withDescription("")))
			}
		case SwapDescription:
			for _, key := range slices.Sorted(maps.Keys(opts.Others)) {
				if key != sk.Key && doc.front != nil {
					add(op, "the description of skill "+key+" given instead", slug(key), withSkillMD(doc.withDescription(opts.Others[key])))
				}
			}
		case CutDescription:
			desc := doc.description()
			for _, n := range budgets(opts.Budgets) {
				if utf8.RuneCountInString(desc) > n.budget {
					add(op, fmt.Sprintf("the description cut to %d characters (%s)", n.budget, strings.Join(n.agents, ", ")), strconv.Itoa(n.budget), withSkillMD(doc.withDescription(string([]rune(desc)[:n.budget]))))
				}
			}
		case Invert:
			for _, r := range rules(doc.body) {
				body := slices.Clone(doc.body)
				body[r.line] = r.inverted
				add(op, fmt.Sprintf("SKILL.md line %d inverted: %q", r.line+1+bodyOffset(doc), strings.TrimSpace(r.inverted)), "line-"+strconv.Itoa(r.line+1+bodyOffset(doc)), withSkillMD(doc.render(doc.front, body)))
			}
		}
	}
	return out, nil
}

// Description is a skill's description, as its SKILL.md's front matter
// gives it.
func Description(sk Skill) string {
	return parseSkillMD(string(sk.Files["SKILL.md"].Data)).description()
}

// bodyOffset is the number of SKILL.md lines above the body.
func bodyOffset(md skillMD) int {
	if md.front == nil {
		return 0
	}
	return len(md.front) + 2
}

// agentBudget is one description budget and the agents that have it.
type agentBudget struct {
	budget int
	agents []string
}

// budgets groups agents by budget, smallest first, so agents that keep as
// much of a description make one mutant.
func budgets(by map[string]int) []agentBudget {
	var out []agentBudget
	for _, kind := range slices.Sorted(maps.Keys(by)) {
		i := slices.IndexFunc(out, func(b agentBudget) bool { return b.budget == by[kind] })
		if i < 0 {
			out = append(out, agentBudget{budget: by[kind]})
			i = len(out) - 1
		}
		out[i].agents = append(out[i].agents, kind)
	}
	slices.SortFunc(out, func(a, b agentBudget) int { return a.budget - b.budget })
	return out
}

// TreeOf is the tree of files, as plan.HashTree would read it from disk.
func TreeOf(files map[string]File) plan.Tree {
	t := plan.Tree{Files: map[string]plan.TreeEntry{}}
	for p, f := range files {
		t.Files[p] = plan.TreeEntry{Digest: digest.FromBytes(f.Data), Mode: f.Mode, Size: int64(len(f.Data))}
		t.Bytes += int64(len(f.Data))
	}
	t.Digest = t.ContentDigest()
	return t
}

// nonName are the runs of characters a #Name cannot hold.
var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// slug makes a title or path a part of a #Name: lower case, words joined
// by '-', at most 40 characters.
func slug(s string) string {
	s = strings.Trim(nonName.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	return s
}
