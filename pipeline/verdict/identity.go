package verdict

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
)

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
	return ObservedIdentity{Models: []string{}, AgentImages: []string{}, AgentVersions: []string{}, CLIVersions: []string{}, Harness: []string{}, Git: []plan.GitRevision{}}
}

// observe is the identity the counted rollouts (neither invalid nor
// missing) recorded.
func observe(recs []RolloutRecord) ObservedIdentity {
	o := emptyObserved()
	models, images, versions, clis, harness := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	gits := map[plan.GitRevision]bool{}
	outside := false
	add := func(set map[string]bool, v string) {
		if v != "" {
			set[v] = true
		}
	}
	for _, r := range recs {
		if r.Status == "" || r.Status == grade.StatusInvalid || r.Status == grade.StatusMissing {
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
		if rec.Status != grade.StatusInvalid {
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
