package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/opencontainers/go-digest"
)

// InstalledSkill is one skill an arm installs, by revision: its installed
// name, its key in the suite and its tree digest.
type InstalledSkill struct {
	Name   string        `json:"name"`
	Key    string        `json:"key"`
	Digest digest.Digest `json:"digest"`
}

// GitRevision is where the suite's repository stood when a rollout ran.
type GitRevision struct {
	Revision string `json:"revision"`
	// Dirty: the suite folder, its skills or its fixtures had changes not
	// committed.
	Dirty bool `json:"dirty"`
}

// RolloutInputs is what a stored rollout ran: the trees its cell image
// held, each verified against the plan while the image was built, the
// images, and where the suite and skillgate stood.
type RolloutInputs struct {
	Fixture digest.Digest    `json:"fixture,omitempty"`
	Overlay digest.Digest    `json:"overlay,omitempty"`
	Skills  []InstalledSkill `json:"skills"`
	// AgentImage and CellImage are image IDs; AgentVersion is the agent
	// image's dev.skillgate.agent-version label.
	AgentImage   string       `json:"agentImage"`
	AgentVersion string       `json:"agentVersion,omitempty"`
	CellImage    string       `json:"cellImage"`
	Git          *GitRevision `json:"git,omitempty"`
	// Harness is the version of skillgate that ran the rollout.
	Harness string `json:"harness"`

	// Environment is the suite environment the cell ran in, if any.
	Environment *EnvironmentInputs `json:"environment,omitempty"`
}

// EnvironmentInputs name the environment a rollout ran in: its name, its plan digest and
// the ID of its image (the Debian root, the built Dockerfile, the pinned image; "" when it
// adds only variables to the agent's own image).
type EnvironmentInputs struct {
	Name   string        `json:"name"`
	Digest digest.Digest `json:"digest"`
	Image  string        `json:"image,omitempty"`
}

// CaseDigest is a case's identity: its rollout inputs (prompt, seed,
// fixture tree), its grade inputs (kind, safety, routing, writes,
// assertions, rubric) and what places it in the metrics (split, tags,
// weight). Two runs of a case with one ID but another digest did not run
// the same case. Its description does not enter it.
func CaseDigest(pc PlanCase) digest.Digest {
	return DigestJSON(struct {
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
	return DigestJSON(set)
}

// CaseChanges names the fields of a case that differ between two plans'
// versions of it, in the order the case digest takes them: prompt, seed,
// fixture, overlay, replies, kind, safety, routing, writes, assert,
// rubric, rubricPass, split, tags, weight.
func CaseChanges(a, b PlanCase) []string {
	fields := []struct {
		name string
		x, y any
	}{
		{"prompt", a.Prompt, b.Prompt},
		{"seed", a.Seed, b.Seed},
		{"fixture", a.FixtureDigest, b.FixtureDigest},
		{"overlay", a.OverlayDigest, b.OverlayDigest},
		{"replies", a.Replies, b.Replies},
		{"kind", a.Kind, b.Kind},
		{"safety", a.Safety, b.Safety},
		{"routing", a.Routing, b.Routing},
		{"writes", a.Writes, b.Writes},
		{"assert", a.Assert, b.Assert},
		{"rubric", a.Rubric, b.Rubric},
		{"rubricPass", a.RubricPass, b.RubricPass},
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
