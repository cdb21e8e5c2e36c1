package plan

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// Cell classes in a plan diff.
const (
	DiffAdded     = "added"
	DiffRemoved   = "removed"
	DiffRollout   = "rollout"
	DiffRegrade   = "regrade"
	DiffUnchanged = "unchanged"
)

// CellDiff is one cell of a plan diff and why it changed.
type CellDiff struct {
	ID      string   `json:"id"`
	Class   string   `json:"class"`
	Reasons []string `json:"reasons,omitempty"`
}

// PlanDiff says which cells of plan B must run again relative to plan A.
type PlanDiff struct {
	From   digest.Digest  `json:"from"`
	To     digest.Digest  `json:"to"`
	Counts map[string]int `json:"counts"`
	// Cells lists every cell of both plans in B's order, then A's removed.
	Cells []CellDiff `json:"cells"`
}

// Same reports whether the two plans run and grade identically.
func (d *PlanDiff) Same() bool {
	return d.Counts[DiffUnchanged] == len(d.Cells)
}

// DiffPlans compares two plans cell by cell.
func DiffPlans(a, b *Plan) *PlanDiff {
	d := &PlanDiff{From: a.Digest, To: b.Digest, Counts: map[string]int{DiffAdded: 0, DiffRemoved: 0, DiffRollout: 0, DiffRegrade: 0, DiffUnchanged: 0}}
	old := map[string]Cell{}
	for _, c := range a.Cells {
		old[c.ID] = c
	}
	reasoners := map[string]*reasoner{}
	seen := map[string]bool{}
	for _, c := range b.Cells {
		seen[c.ID] = true
		o, ok := old[c.ID]
		cd := CellDiff{ID: c.ID}
		r := reasoners[c.Agent]
		if r == nil {
			// A plan on several agents explains a cell from its own agent.
			r = newReasoner(a.ForAgent(c.Agent), b.ForAgent(c.Agent))
			reasoners[c.Agent] = r
		}
		switch {
		case !ok:
			cd.Class = DiffAdded
		case o.Rollout != c.Rollout:
			cd.Class = DiffRollout
			cd.Reasons = r.rollout(c.Case, c.Arm)
		case o.Grade != c.Grade:
			cd.Class = DiffRegrade
			cd.Reasons = r.grade(c.Case)
		default:
			cd.Class = DiffUnchanged
		}
		d.Counts[cd.Class]++
		d.Cells = append(d.Cells, cd)
	}
	for _, c := range a.Cells {
		if !seen[c.ID] {
			d.Counts[DiffRemoved]++
			d.Cells = append(d.Cells, CellDiff{ID: c.ID, Class: DiffRemoved})
		}
	}
	return d
}

// reasoner explains key changes from the plans' inputs, memoized per case
// and arm since thousands of cells share them.
type reasoner struct {
	a, b       *Plan
	aCase      map[string]PlanCase
	aArm       map[string]PlanArm
	bCase      map[string]PlanCase
	bArm       map[string]PlanArm
	common     []string
	memoArm    map[string][]string
	memoCase   map[string][]string
	memoGrade  map[string][]string
	judgeDiffs []string
}

func newReasoner(a, b *Plan) *reasoner {
	r := &reasoner{a: a, b: b, aCase: map[string]PlanCase{}, bCase: map[string]PlanCase{}, aArm: map[string]PlanArm{}, bArm: map[string]PlanArm{},
		memoArm: map[string][]string{}, memoCase: map[string][]string{}, memoGrade: map[string][]string{}}
	for _, c := range a.Cases {
		r.aCase[c.ID] = c
	}
	for _, c := range b.Cases {
		r.bCase[c.ID] = c
	}
	for _, x := range a.Arms {
		r.aArm[x.Name] = x
	}
	for _, x := range b.Arms {
		r.bArm[x.Name] = x
	}
	if a.Agent.Digest != b.Agent.Digest {
		r.common = append(r.common, fieldDiffs("agent", AgentIdentity(a.Agent.Agent), AgentIdentity(b.Agent.Agent))...)
	}
	if a.Limits.Digest != b.Limits.Digest {
		r.common = append(r.common, fieldDiffs("limits", a.Limits.Limits, b.Limits.Limits)...)
	}
	switch {
	case a.Judge == nil && b.Judge != nil:
		r.judgeDiffs = []string{"judge added"}
	case a.Judge != nil && b.Judge == nil:
		r.judgeDiffs = []string{"judge removed"}
	case a.Judge != nil && a.Judge.Digest != b.Judge.Digest:
		r.judgeDiffs = fieldDiffs("judge", a.Judge.Judge, b.Judge.Judge)
		if a.Suite.Seed != b.Suite.Seed {
			r.judgeDiffs = append(r.judgeDiffs, fmt.Sprintf("seed: %d → %d", a.Suite.Seed, b.Suite.Seed))
		}
		if len(r.judgeDiffs) == 0 {
			r.judgeDiffs = []string{"judge template changed"}
		}
	}
	return r
}

func (r *reasoner) rollout(caseID, arm string) []string {
	out := append([]string{}, r.common...)
	out = append(out, r.arm(arm, caseID)...)
	out = append(out, r.caseRollout(caseID)...)
	if len(out) == 0 {
		out = []string{"trial key changed"}
	}
	return out
}

// arm explains an arm's change as it applies to case caseID: an arm with
// targets installs the case's.
func (r *reasoner) arm(name, caseID string) []string {
	memo := name
	a, b := r.aArm[name], r.bArm[name]
	if a.Targets || b.Targets {
		memo += "\x00" + caseID
		a, b = CaseArm(r.a, r.aCase[caseID], a), CaseArm(r.b, r.bCase[caseID], b)
	}
	if rs, ok := r.memoArm[memo]; ok {
		return rs
	}
	var out []string
	if a.Digest != b.Digest {
		if a.Activation != b.Activation && len(b.Skills) > 0 {
			out = append(out, fmt.Sprintf("arm %s: activation %s → %s", name, a.Activation, b.Activation))
		}
		if !reflect.DeepEqual(a.Skills, b.Skills) {
			out = append(out, fmt.Sprintf("arm %s: skills [%s] → [%s]", name, strings.Join(a.Skills, " "), strings.Join(b.Skills, " ")))
		}
		for _, key := range b.Skills {
			as, okA := r.a.Skills[key]
			bs := r.b.Skills[key]
			if !okA || as.Digest == bs.Digest {
				continue
			}
			for _, ch := range DiffTrees(as.Tree, bs.Tree) {
				out = append(out, fmt.Sprintf("skill %s: %s %s", key, ch.Path, ch.Change))
			}
			if as.Name != bs.Name {
				out = append(out, fmt.Sprintf("skill %s: installed as %s → %s", key, as.Name, bs.Name))
			}
		}
		if a.ReplicateOf != b.ReplicateOf {
			out = append(out, fmt.Sprintf("arm %s: replicateOf %q → %q (a replicate's name enters its keys)", name, a.ReplicateOf, b.ReplicateOf))
		}
		if b.Activation == "forced" && r.a.Agent.ForcedPrompt != r.b.Agent.ForcedPrompt {
			out = append(out, "agent.forcedPrompt changed")
		}
		if len(out) == 0 {
			out = append(out, fmt.Sprintf("arm %s changed", name))
		}
	}
	r.memoArm[memo] = out
	return out
}

// caseName names a case in a reason, with the files in another system's
// format its values come from, so an edit to a tasks.json or a case.md is
// traced to the file.
func (r *reasoner) caseName(id string) string {
	c, ok := r.bCase[id]
	if !ok {
		c = r.aCase[id]
	}
	if len(c.Sources) == 0 {
		return "case " + id
	}
	return fmt.Sprintf("case %s (%s)", id, strings.Join(c.Sources, ", "))
}

func (r *reasoner) caseRollout(id string) []string {
	if rs, ok := r.memoCase[id]; ok {
		return rs
	}
	a, b := r.aCase[id], r.bCase[id]
	var out []string
	if a.RolloutDigest != b.RolloutDigest {
		if a.Prompt != b.Prompt {
			out = append(out, fmt.Sprintf("%s: prompt changed", r.caseName(id)))
		}
		if !reflect.DeepEqual(a.Seed, b.Seed) {
			out = append(out, fmt.Sprintf("%s: seed conversation changed", r.caseName(id)))
		}
		for _, fx := range []struct {
			field, a, b string
			ad, bd      digest.Digest
		}{{"fixture", a.Fixture, b.Fixture, a.FixtureDigest, b.FixtureDigest}, {"overlay", a.Overlay, b.Overlay, a.OverlayDigest, b.OverlayDigest}} {
			if fx.ad == fx.bd {
				continue
			}
			if fx.a != fx.b {
				out = append(out, fmt.Sprintf("case %s: %s %q → %q", id, fx.field, fx.a, fx.b))
			}
			at, bt := r.a.Fixtures[CleanKey(fx.a)], r.b.Fixtures[CleanKey(fx.b)]
			for _, ch := range DiffTrees(at, bt) {
				out = append(out, fmt.Sprintf("%s %s: %s %s", fx.field, fx.b, ch.Path, ch.Change))
			}
		}
		// slices.Equal: a plan file read back holds nil where a compiled
		// plan holds no replies.
		if !slices.Equal(a.Replies, b.Replies) {
			out = append(out, fmt.Sprintf("%s: replies changed", r.caseName(id)))
		} else if len(b.Replies) > 0 && !reflect.DeepEqual(r.a.Agent.Resume, r.b.Agent.Resume) {
			out = append(out, "agent.resume changed")
		} else if len(b.Replies) > 0 && !reflect.DeepEqual(r.a.Agent.SessionArgs, r.b.Agent.SessionArgs) {
			out = append(out, "agent.sessionArgs changed")
		}
		out = append(out, r.environment(id, a, b)...)
		if !reflect.DeepEqual(a.Setup, b.Setup) {
			out = append(out, fmt.Sprintf("%s: setup changed", r.caseName(id)))
		} else if b.Setup != nil && b.Setup.Timeout == "" && r.a.Limits.Setup != r.b.Limits.Setup {
			out = append(out, fmt.Sprintf("limits.setup: %s → %s", r.a.Limits.Setup, r.b.Limits.Setup))
		}
		if b.Setup != nil {
			out = append(out, r.caseDir(id, a, b)...)
		}
	}
	r.memoCase[id] = out
	return out
}

func (r *reasoner) grade(id string) []string {
	if rs, ok := r.memoGrade[id]; ok {
		return rs
	}
	a, b := r.aCase[id], r.bCase[id]
	var out []string
	if a.GradeDigest != b.GradeDigest {
		type gradeInputs struct {
			Kind    string            `json:"kind"`
			Safety  bool              `json:"safety"`
			Routing suite.Routing     `json:"routing"`
			Writes  *[]string         `json:"writes"`
			Assert  []suite.Assertion `json:"assert"`
			Rubric  []string          `json:"rubric"`
		}
		ga := gradeInputs{a.Kind, a.Safety, a.Routing, a.Writes, a.Assert, a.Rubric}
		gb := gradeInputs{b.Kind, b.Safety, b.Routing, b.Writes, b.Assert, b.Rubric}
		out = append(out, fieldDiffs(r.caseName(id), ga, gb)...)
		out = append(out, r.caseDir(id, a, b)...)
		for _, name := range slices.Sorted(maps.Keys(checkEnvironments(r.b, b))) {
			ae, be := r.a.Environments[name], r.b.Environments[name]
			if ae.Digest != be.Digest {
				out = append(out, r.environmentChanges(name, ae, be)...)
			}
		}
	}
	out = append(out, r.judgeDiffs...)
	if len(out) == 0 {
		out = []string{"grade key changed"}
	}
	r.memoGrade[id] = out
	return out
}

func CleanKey(p string) string {
	if p == "" {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/")
}

// fieldDiffs names the top-level JSON fields that differ between a and b,
// with short values where they are scalars.
func fieldDiffs(prefix string, a, b any) []string {
	am, bm := jsonFields(a), jsonFields(b)
	keys := map[string]bool{}
	for k := range am {
		keys[k] = true
	}
	for k := range bm {
		keys[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		x, y := am[k], bm[k]
		if string(x) == string(y) {
			continue
		}
		if len(x) <= 60 && len(y) <= 60 && !strings.ContainsAny(string(x)+string(y), "{[") {
			out = append(out, fmt.Sprintf("%s.%s: %s → %s", prefix, k, orNone(x), orNone(y)))
		} else {
			out = append(out, fmt.Sprintf("%s.%s changed", prefix, k))
		}
	}
	return out
}

func orNone(b json.RawMessage) string {
	if len(b) == 0 {
		return "(unset)"
	}
	return string(b)
}

func jsonFields(v any) map[string]json.RawMessage {
	b, _ := json.Marshal(v)
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(b, &m)
	return m
}

// Groups gathers the diff's cells by class and reasons, for printing.
func (d *PlanDiff) Groups() []DiffGroup {
	idx := map[string]int{}
	var gs []DiffGroup
	for _, c := range d.Cells {
		key := c.Class + "\x00" + strings.Join(c.Reasons, "\x00")
		i, ok := idx[key]
		if !ok {
			i = len(gs)
			idx[key] = i
			gs = append(gs, DiffGroup{Class: c.Class, Reasons: c.Reasons})
		}
		gs[i].Cells = append(gs[i].Cells, c.ID)
	}
	order := map[string]int{DiffRollout: 0, DiffRegrade: 1, DiffAdded: 2, DiffRemoved: 3, DiffUnchanged: 4}
	sort.SliceStable(gs, func(i, j int) bool { return order[gs[i].Class] < order[gs[j].Class] })
	return gs
}

// DiffGroup is a set of cells that changed for the same reasons.
type DiffGroup struct {
	Class   string
	Reasons []string
	Cells   []string
}

// String renders the diff for people.
func (d *PlanDiff) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan %s → %s\n", Short(d.From), Short(d.To))
	fmt.Fprintf(&b, "%d need rollout, %d need regrade only, %d added, %d removed, %d unchanged\n",
		d.Counts[DiffRollout], d.Counts[DiffRegrade], d.Counts[DiffAdded], d.Counts[DiffRemoved], d.Counts[DiffUnchanged])
	titles := map[string]string{DiffRollout: "need rollout", DiffRegrade: "need regrade only", DiffAdded: "added", DiffRemoved: "removed", DiffUnchanged: "unchanged"}
	for _, g := range d.Groups() {
		fmt.Fprintf(&b, "\n%s (%d):\n", titles[g.Class], len(g.Cells))
		for _, r := range g.Reasons {
			fmt.Fprintf(&b, "  because %s\n", r)
		}
		fmt.Fprintf(&b, "  cells: %s\n", strings.Join(g.Cells, " "))
	}
	return b.String()
}

func Short(d digest.Digest) string {
	if err := d.Validate(); err != nil {
		return string(d)
	}
	return d.Algorithm().String() + ":" + d.Encoded()[:12]
}

// environment explains a change of the environment case id runs in.
func (r *reasoner) environment(id string, a, b PlanCase) []string {
	if a.EnvironmentDigest == b.EnvironmentDigest {
		return nil
	}
	if a.Environment != b.Environment {
		return []string{fmt.Sprintf("case %s: environment %q → %q", id, a.Environment, b.Environment)}
	}
	return r.environmentChanges(b.Environment, r.a.Environments[a.Environment], r.b.Environments[b.Environment])
}

// environmentChanges names what differs between two versions of one environment: its
// fields, the files of its Dockerfile folder, the environment it is built from.
func (r *reasoner) environmentChanges(name string, a, b PlanEnvironment) []string {
	var out []string
	ae, be := a.Environment, b.Environment
	if ae.Dockerfile != nil && be.Dockerfile != nil && a.Tree != nil && b.Tree != nil {
		for _, ch := range DiffTrees(*a.Tree, *b.Tree) {
			out = append(out, fmt.Sprintf("environment %s: %s %s", name, path.Join(be.Dockerfile.Path, ch.Path), ch.Change))
		}
		if ae.Dockerfile.From == be.Dockerfile.From && be.Dockerfile.From != "" {
			from := be.Dockerfile.From
			if ad, bd := r.a.Environments[from], r.b.Environments[from]; ad.Digest != bd.Digest {
				out = append(out, r.environmentChanges(from, ad, bd)...)
			}
		}
		ae.Dockerfile, be.Dockerfile = nil, nil
		if a.Environment.Dockerfile.From != b.Environment.Dockerfile.From {
			out = append(out, fmt.Sprintf("environment %s: dockerfile.from %q → %q", name, a.Environment.Dockerfile.From, b.Environment.Dockerfile.From))
		}
	}
	if ad, bd := ae.Debian, be.Debian; ad != nil && bd != nil {
		if ad.Release != bd.Release {
			out = append(out, fmt.Sprintf("environment %s: debian.release %s → %s", name, ad.Release, bd.Release))
		}
		ap, bp := DebianPackages(ad.Packages), DebianPackages(bd.Packages)
		for _, pkg := range bp {
			if !slices.Contains(ap, pkg) {
				out = append(out, fmt.Sprintf("environment %s: debian package %s added", name, pkg))
			}
		}
		for _, pkg := range ap {
			if !slices.Contains(bp, pkg) {
				out = append(out, fmt.Sprintf("environment %s: debian package %s removed", name, pkg))
			}
		}
		ae.Debian, be.Debian = nil, nil
	}
	ae.Description, be.Description = "", ""
	out = append(out, fieldDiffs("environment "+name, ae, be)...)
	if len(out) == 0 {
		out = []string{fmt.Sprintf("environment %s changed", name)}
	}
	return out
}

// caseDir explains a change of case id's folder.
func (r *reasoner) caseDir(id string, a, b PlanCase) []string {
	if a.CaseDirDigest == b.CaseDirDigest {
		return nil
	}
	if a.CaseDir != b.CaseDir {
		return []string{fmt.Sprintf("case %s: caseDir %q → %q", id, a.CaseDir, b.CaseDir)}
	}
	var out []string
	for _, ch := range DiffTrees(r.a.CaseDirs[path.Clean(a.CaseDir)], r.b.CaseDirs[path.Clean(b.CaseDir)]) {
		out = append(out, fmt.Sprintf("caseDir %s: %s %s", b.CaseDir, ch.Path, ch.Change))
	}
	return out
}
