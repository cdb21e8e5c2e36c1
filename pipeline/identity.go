package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"

	"github.com/opencontainers/go-digest"
)

// CaseDigest is a case's identity: its rollout inputs (prompt, seed,
// fixture tree), its grade inputs (kind, safety, routing, writes,
// assertions, rubric) and what places it in the metrics (split, tags,
// weight). Two runs of a case with one ID but another digest did not run
// the same case. Its description does not enter it.
func CaseDigest(pc PlanCase) digest.Digest {
	return digestJSON(struct {
		Rollout digest.Digest `json:"rollout"`
		Grade   digest.Digest `json:"grade"`
		Split   string        `json:"split"`
		Tags    []string      `json:"tags"`
		Weight  float64       `json:"weight"`
	}{pc.RolloutDigest, pc.GradeDigest, pc.Split, pc.Tags, pc.Weight})
}

// CaseSetDigest digests the plan's case IDs, sorted, each with its case
// digest: the exact case set a run measured.
func CaseSetDigest(cases []PlanCase) digest.Digest {
	type entry struct {
		ID     string        `json:"id"`
		Digest digest.Digest `json:"digest"`
	}
	set := make([]entry, len(cases))
	for i, pc := range cases {
		set[i] = entry{pc.ID, CaseDigest(pc)}
	}
	sort.Slice(set, func(i, j int) bool { return set[i].ID < set[j].ID })
	return digestJSON(set)
}

// CaseChanges names the fields of a case that differ between two plans'
// versions of it, in the order the case digest takes them: prompt, seed,
// fixture, kind, safety, routing, writes, assert, rubric, split, tags,
// weight.
func CaseChanges(a, b PlanCase) []string {
	fields := []struct {
		name string
		x, y any
	}{
		{"prompt", a.Prompt, b.Prompt},
		{"seed", a.Seed, b.Seed},
		{"fixture", a.FixtureDigest, b.FixtureDigest},
		{"kind", a.Kind, b.Kind},
		{"safety", a.Safety, b.Safety},
		{"routing", a.Routing, b.Routing},
		{"writes", a.Writes, b.Writes},
		{"assert", a.Assert, b.Assert},
		{"rubric", a.Rubric, b.Rubric},
		{"split", a.Split, b.Split},
		{"tags", a.Tags, b.Tags},
		{"weight", a.Weight, b.Weight},
	}
	var out []string
	for _, f := range fields {
		if !bytes.Equal(mustJSON(f.x), mustJSON(f.y)) {
			out = append(out, f.name)
		}
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", v, err)) // only plan types reach here
	}
	return b
}

// InstalledSkills lists an arm's skills by revision, in the arm's order:
// what its cells install, and what their rollouts record.
func InstalledSkills(p *Plan, arm PlanArm) []InstalledSkill {
	out := []InstalledSkill{}
	for _, key := range arm.Skills {
		out = append(out, InstalledSkill{Name: p.Skills[key].Name, Key: key, Digest: p.Skills[key].Digest})
	}
	return out
}

// upstreamHost is the host of an agent's or judge's upstream URL.
func upstreamHost(upstream string) string {
	if upstream == "" {
		return ""
	}
	u, err := url.Parse(upstream)
	if err != nil {
		return upstream
	}
	return u.Host
}

// emptyObserved is the identity of no rollout: every list empty, not null.
func emptyObserved() ObservedIdentity {
	return ObservedIdentity{Models: []string{}, AgentImages: []string{}, AgentVersions: []string{}, CLIVersions: []string{}, Harness: []string{}, Git: []GitRevision{}}
}

// observe is the identity the counted rollouts (neither invalid nor
// missing) recorded.
func observe(recs []RolloutRecord) ObservedIdentity {
	o := emptyObserved()
	models, images, versions, clis, harness := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	gits := map[GitRevision]bool{}
	outside := false
	add := func(set map[string]bool, v string) {
		if v != "" {
			set[v] = true
		}
	}
	for _, r := range recs {
		if r.Status == "" || r.Status == StatusInvalid || r.Status == StatusMissing {
			continue
		}
		o.Rollouts++
		for _, m := range r.Models {
			add(models, m)
		}
		add(images, r.Inputs.AgentImage)
		add(versions, r.Inputs.AgentVersion)
		add(clis, r.CLIVersion)
		add(harness, r.Inputs.Harness)
		if r.Inputs.Git != nil {
			gits[*r.Inputs.Git] = true
		} else {
			outside = true
		}
	}
	o.Models = slices.Sorted(maps.Keys(models))
	o.AgentImages = slices.Sorted(maps.Keys(images))
	o.AgentVersions = slices.Sorted(maps.Keys(versions))
	o.CLIVersions = slices.Sorted(maps.Keys(clis))
	o.Harness = slices.Sorted(maps.Keys(harness))
	for g := range gits {
		o.Git = append(o.Git, g)
	}
	sort.Slice(o.Git, func(i, j int) bool {
		if o.Git[i].Revision != o.Git[j].Revision {
			return o.Git[i].Revision < o.Git[j].Revision
		}
		return !o.Git[i].Dirty
	})
	o.GitMixed = len(o.Git) > 1 || (len(o.Git) > 0 && outside)
	return o
}

// ObserveRollouts completes a report with what the plan's stored rollouts
// recorded: who answered, per arm and over the run, and the skill or
// fixture files that changed while an invocation ran. Such a change made
// its rollouts invalid, so the verdict is INCOMPLETE, and it says which
// file: "INPUT-CHANGED skill s: SKILL.md modified (4 cells)".
func ObserveRollouts(r *Report, recs []RolloutRecord) {
	r.Observed = observe(recs)
	byArm := map[string][]RolloutRecord{}
	for _, rec := range recs {
		byArm[rec.Arm] = append(byArm[rec.Arm], rec)
	}
	for i := range r.Arms {
		r.Arms[i].Observed = observe(byArm[r.Arms[i].Name])
	}
	changed := map[string]int{}
	for _, rec := range recs {
		if rec.Status != StatusInvalid {
			continue
		}
		for _, c := range rec.InputsChanged {
			changed[c]++
		}
	}
	if len(changed) == 0 {
		return
	}
	for _, c := range slices.Sorted(maps.Keys(changed)) {
		r.Verdict.Reasons = append(r.Verdict.Reasons, fmt.Sprintf("INPUT-CHANGED %s (%d cells)", c, changed[c]))
	}
	r.Verdict.Verdict = VerdictIncomplete
	r.Verdict.ExitCode = ExitCode(VerdictIncomplete)
}
