package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// TestPortabilityEndToEnd: one skill on the real Claude Code and Codex CLIs
// in real containers, on the scripted model, from one suite on two agents.
// Each agent's cells run in its own image; the verdict gives each agent its
// figures (Claude Code +100 points with the skill observed through its Skill
// tool, Codex +0 with the skill inferred from a read of SKILL.md) and fails
// the portability rule naming Codex. A second run reruns nothing.
func TestPortabilityEndToEnd(t *testing.T) {
	e := dockertest.Engine(t)
	s := copyAgentSuite(t, e, "portability")
	if len(s.Plan.Agents) != 2 || len(s.Plan.Cells) != 4 {
		t.Fatalf("%d agents, %d cells, want 2 and 4", len(s.Plan.Agents), len(s.Plan.Cells))
	}
	out := t.TempDir()
	var log bytes.Buffer
	sum, rep, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2, Log: &log})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if !sum.Complete() || sum.Statuses[store.StatusCompleted] != 4 || sum.Ran != 4 {
		t.Fatalf("summary %+v\n%s", sum, log.String())
	}
	pt := rep.Portability
	if pt == nil || len(pt.Agents) != 2 {
		t.Fatalf("portability %+v", pt)
	}
	want := map[string]struct {
		kind     string
		uplift   float64
		evidence string
	}{"claude-code": {"claude-code", 1, grade.EvidenceObserved}, "codex": {"codex", 0, grade.EvidenceInferred}}
	for _, a := range pt.Agents {
		w := want[a.Agent]
		if a.Kind != w.kind || a.Uplift == nil || a.Uplift.Estimate != w.uplift || a.Activation["forced"][w.evidence] != 1 {
			t.Errorf("agent %s: kind %s, uplift %+v, activation %v; want %s, %+.0f, forced %s", a.Agent, a.Kind, a.Uplift, a.Activation, w.kind, w.uplift, w.evidence)
		}
	}
	if pt.Heterogeneity == nil || pt.Heterogeneity.N != 1 || pt.Heterogeneity.Groups != 2 {
		t.Errorf("heterogeneity %+v, want 1 case of 2 agents", pt.Heterogeneity)
	}
	if rep.Verdict.Verdict != verdict.VerdictFail || !slices.ContainsFunc(rep.Verdict.Reasons, func(r string) bool { return strings.HasPrefix(r, "NO-UPLIFT-ON codex:") }) {
		t.Errorf("verdict %s, reasons %q; want FAIL naming codex", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
	// verdict.json carries the table under its schema; report.html and
	// report.md show it.
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "schema", "outputs", "gstack", "verdict.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "verdict.json"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil || !bytes.Contains(b, []byte(`"portability": [`)) {
		t.Errorf("verdict.json: %v\n%s", err, b)
	}
	for _, f := range []string{"report.html", "report.md"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || !bytes.Contains(b, []byte("Portability: does the uplift hold on every agent?")) || !bytes.Contains(b, []byte("100.0 points (forced − none, 1 case × 1 trial)")) {
			t.Errorf("%s: no portability table (%v)", f, err)
		}
	}
	again, _, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2, Log: &log})
	if err != nil || again.Ran != 0 || again.Reused != 4 {
		t.Fatalf("second run: ran %d, reused %d, err %v", again.Ran, again.Reused, err)
	}
}

// A plan on several agents is sharded as each agent's share of it runs:
// the whole plan's shards and an agent's share's agree cell by cell, and
// each agent's cells are spread over the shards.
func TestAgentSetShards(t *testing.T) {
	s := copyAgentSuite(t, nil, "portability")
	whole := ShardsOf(s.Plan, 2)
	if len(whole) != len(s.Plan.Cells) {
		t.Fatalf("%d of %d cells sharded", len(whole), len(s.Plan.Cells))
	}
	for _, name := range s.Plan.AgentNames() {
		used := map[int]bool{}
		for id, shard := range ShardsOf(s.Plan.ForAgent(name), 2) {
			if whole[id] != shard {
				t.Errorf("cell %s: shard %d in the whole plan, %d in %s's share", id, whole[id], shard, name)
			}
			used[shard] = true
		}
		if len(used) != 2 {
			t.Errorf("%s's cells in shards %v, want both", name, used)
		}
	}
}
