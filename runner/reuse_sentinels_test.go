package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/gateway/standin"
	"github.com/skillgate/skillgate/runner/reuse"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// sentinelSuite is six cases of two trials, a no-skill arm and a skill
// arm, on the command agent asking the STAND-IN PROVIDER (not a model) for
// an answer; each case passes when the answer says "sunny".
func sentinelSuite(t *testing.T, up *standin.Server) (string, func() runSuite) {
	var cases strings.Builder
	for _, c := range "abcdef" {
		cases.WriteString("\t\t" + string(c) + `: {prompt: "p` + string(c) + `", assert: [{answer: contains: "sunny"}]}` + "\n")
	}
	root, dir := standinReuseSuite(t, up, "runtest-reuse-sentinels", "weather?", 2, cases.String(), "policy: policies.advisory")
	return dir, func() runSuite {
		p, err := plan.CompileDir(dir)
		if err != nil {
			t.Fatal(suite.PrintError(err, root))
		}
		return runSuite{Dir: dir, Plan: p}
	}
}

// TestReuseSentinels: a first run of 24 cells, all passing; then
//
//   - the skill edited, the provider unchanged: --reuse takes the 12
//     no-skill cells, runs 6 of them again as sentinels (one per case),
//     which agree: the reuse is kept, 18 cells start in all;
//   - the skill edited, the provider now answering otherwise under the same
//     model version: the 6 sentinels fail where the stored cells passed,
//     p = 1/64 < 0.05, the reuse is refused and the 12 no-skill cells run
//     again; the log, reuse-sentinels.json and report.md say why;
//   - nothing edited, every cell reused, the provider answering under
//     another version: the sentinels alone show it, and the reuse is
//     refused by their identity.
func TestReuseSentinels(t *testing.T) {
	e := dockertest.Engine(t)
	t.Setenv("SKILLGATE_TEST_KEY", "sk-ant-stand-in")
	up := standin.New(t, false)
	up.Reply("sunny today")
	dir, compile := sentinelSuite(t, up)
	s := compile()
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"="+s.Plan.Suite.Name) })
	cacheDir := t.TempDir()
	first := filepath.Join(t.TempDir(), "first")
	if sum, _, err := Evaluate(context.Background(), s.Plan, Options{Out: first, SuiteDir: dir, Jobs: 4, Cache: cacheDir}); err != nil || sum.Ran != 24 {
		t.Fatalf("first run: %+v, %v", sum, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "skill", "SKILL.md"), []byte("---\nname: s\ndescription: A test skill, edited.\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := compile()
	evaluate := func(s runSuite, name string, dry bool) (*Summary, string, string) {
		t.Helper()
		out := filepath.Join(t.TempDir(), name)
		var log bytes.Buffer
		before := up.Count("POST /v1/messages")
		sum, _, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: dir, Jobs: 4, Cache: cacheDir, Reuse: first, Log: &log, DryRun: dry})
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, log.String())
		}
		if calls := up.Count("POST /v1/messages") - before; !dry && calls != sum.Ran+sum.Sentinels {
			t.Errorf("%s: the provider answered %d cells, the summary says %d ran and %d sentinels", name, calls, sum.Ran, sum.Sentinels)
		}
		return sum, out, log.String()
	}

	dry, _, log := evaluate(s2, "dry", true)
	if dry.Taken != 12 || dry.Sentinels != 6 || !strings.Contains(log, "would run 6 reused cells again as drift sentinels") {
		t.Errorf("dry run: %+v\n%s", dry, log)
	}
	if msg := DescribeSummary(dry, "", true); !strings.Contains(msg, "12 would be reused from --reuse, after 6 of them run again as drift sentinels") {
		t.Errorf("dry run summary: %s", msg)
	}

	kept, out, log := evaluate(s2, "kept", false)
	if kept.Taken != 12 || kept.Ran != 12 || kept.Sentinels != 6 || len(kept.ReuseRefused) != 0 {
		t.Errorf("sentinels agreeing: %+v, want 12 taken, the 12 skill cells and 6 sentinels run\n%s", kept, log)
	}
	if !strings.Contains(log, "reuse sentinels for model m (agent command): 6 rerun, stored 6/6 passed, now 6/6; exact McNemar mid-p on discordant cases p=1 ≥ 0.05: reuse kept") {
		t.Errorf("the log does not say the reuse was kept:\n%s", log)
	}
	if ledger, _ := reuse.Ledger(out); len(ledger) != 12 {
		t.Errorf("reused.json lists %d rollouts, want 12", len(ledger))
	}
	sentinels := 0
	for _, ro := range stored(t, out) {
		if strings.HasSuffix(ro.Cell, "/sentinel") {
			sentinels++
		}
	}
	if sentinels != 6 {
		t.Errorf("%d sentinel rollouts stored, want 6", sentinels)
	}
	r, err := Report(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.ReuseSentinels == nil || len(r.ReuseSentinels.Groups) != 1 || r.Verdict.Verdict == "" {
		t.Errorf("report.json's sentinels: %+v", r.ReuseSentinels)
	}
	cells := 0
	for _, a := range r.Arms {
		cells += a.Cells
	}
	if cells != 24 {
		t.Errorf("the report's arms count %d cells, want the plan's 24 (no sentinel)", cells)
	}

	up.Reply("cloudy today")
	refused, out, log := evaluate(s2, "refused", false)
	if refused.Taken != 0 || refused.Ran != 24 || refused.Sentinels != 6 || len(refused.ReuseRefused) != 1 {
		t.Errorf("sentinels disagreeing: %+v, want the 12 reused cells refused and all 24 run\n%s", refused, log)
	}
	want := "reuse sentinels for model m (agent command): 6 rerun, stored 6/6 passed, now 0/6; exact McNemar mid-p on discordant cases p=0.016 < 0.05: reuse refused, 12 reused cells run again"
	if !strings.Contains(log, want) {
		t.Errorf("the log does not say why the reuse was refused:\n%s", log)
	}
	if ledger, _ := reuse.Ledger(out); len(ledger) != 0 {
		t.Errorf("reused.json still lists %d refused rollouts", len(ledger))
	}
	for _, c := range s2.Plan.Cells {
		ro := stored(t, out)[c.ID]
		if ro == nil || ro.Status == store.StatusInvalid || !strings.Contains(ro.Answer, "cloudy") {
			t.Errorf("%s: %+v, want a fresh rollout", c.ID, ro)
		}
	}
	var rec verdict.ReuseSentinels
	if b, err := os.ReadFile(filepath.Join(out, "reuse-sentinels.json")); err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("reuse-sentinels.json: %v", err)
	}
	if g := rec.Groups; len(g) != 1 || g[0].Decision != verdict.SentinelsRefused || g[0].P != 0.01563 || g[0].Again != 12 || len(g[0].Cells) != 6 {
		t.Errorf("reuse-sentinels.json: %+v", rec)
	}
	page, _ := os.ReadFile(filepath.Join(out, "report.html"))
	if !strings.Contains(string(page), "Reuse drift sentinels") || !strings.Contains(string(page), "reuse refused, 12 reused cells run again") {
		t.Errorf("report.html does not say the reuse was refused")
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "Reuse drift sentinels") || !strings.Contains(string(md), "reuse refused, 12 reused cells run again") {
		t.Errorf("report.md does not say the reuse was refused:\n%s", md)
	}

	// Every cell reused: no fresh cell to compare identities with but the
	// sentinels.
	up.Reply("sunny today")
	up.AnswerAs("stand-in-model-2")
	// The skill as the first run had it: no sentinel from its arm is then
	// invalid for a changed input, whichever arms the sample draws.
	if err := os.WriteFile(filepath.Join(dir, "skill", "SKILL.md"), []byte("---\nname: s\ndescription: A test skill.\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	all, _, log := evaluate(s, "identity", false)
	if all.Taken != 0 || all.Ran != 24 || all.Sentinels != 6 || len(all.ReuseRefused) != 1 {
		t.Errorf("every cell reused, another model version: %+v, want the reuse refused by the sentinels\n%s", all, log)
	}
	if !strings.Contains(log, "the provider answered m as stand-in-model-2 in the sentinels, as stand-in-model in the reused rollouts: reuse refused, 24 reused cells run again") {
		t.Errorf("the log does not say the sentinels' version refused the reuse:\n%s", log)
	}
	if strings.Contains(log, "changed during the run") {
		t.Errorf("the skill restored, a change was seen:\n%s", log)
	}
}

// TestReuseSentinelsTooFewCases: a suite of two cases, its sentinels drawn
// from the no-skill arm alone (policy.reuse.arms): two sentinels run, and
// with two cases no outcome could refuse at 0.05, so the line says the
// reuse stands unchecked by outcome instead of pretending it was tested.
func TestReuseSentinelsTooFewCases(t *testing.T) {
	e := dockertest.Engine(t)
	root := writeRepo(t, map[string]string{
		"s/skill/SKILL.md": "---\nname: s\ndescription: A test skill.\n---\n",
		"s/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "runtest-reuse-few"
	skills: s: path: "skill"
	agent: agents.command & {command: ["sh", "-c", "echo sunny"]}
	trials: 1
	arms: {
		none: {}
		forced: {skills: ["s"], activation: "forced"}
	}
	cases: {
		a: {prompt: "pa", assert: [{answer: contains: "sunny"}]}
		b: {prompt: "pb", assert: [{answer: contains: "sunny"}]}
	}
	policy: policies.advisory & {reuse: arms: ["none"]}
}
`,
	})
	dir := filepath.Join(root, "s")
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"="+p.Suite.Name) })
	first := filepath.Join(t.TempDir(), "first")
	if sum, _, err := Evaluate(context.Background(), p, Options{Out: first, SuiteDir: dir, Jobs: 4}); err != nil || sum.Ran != 4 {
		t.Fatalf("first run: %+v, %v", sum, err)
	}
	out := filepath.Join(t.TempDir(), "second")
	var log bytes.Buffer
	sum, _, err := Evaluate(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 4, Reuse: first, Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if sum.Taken != 4 || sum.Ran != 0 || sum.Sentinels != 2 {
		t.Errorf("summary %+v, want 4 taken and 2 sentinels run\n%s", sum, log.String())
	}
	want := "reuse sentinels for model (none asked) (agent command): 2 rerun, stored 2/2 passed, now 2/2; exact McNemar mid-p on discordant cases p=1; with 2 cases no outcome could refuse at 0.05 (smallest p 0.25): not checked by outcome: reuse kept"
	if !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say the reuse stands unchecked:\n%s", log.String())
	}
	rec, err := readbackSentinels(out)
	if err != nil || len(rec.Groups) != 1 {
		t.Fatalf("reuse-sentinels.json: %+v, %v", rec, err)
	}
	for _, c := range rec.Groups[0].Cells {
		if !strings.Contains(c.Cell, "/none/") {
			t.Errorf("sentinel %s drawn outside policy.reuse.arms", c.Cell)
		}
	}
}

func readbackSentinels(out string) (*verdict.ReuseSentinels, error) {
	var rec verdict.ReuseSentinels
	b, err := os.ReadFile(filepath.Join(out, "reuse-sentinels.json"))
	if err != nil {
		return nil, err
	}
	return &rec, json.Unmarshal(b, &rec)
}

// twoCases are two cases without assertions, for standinReuseSuite.
const twoCases = "\t\ta: {prompt: \"pa\"}\n\t\tb: {prompt: \"pb\"}\n"

// standinReuseSuite writes a suite named name, a no-skill arm and a forced
// skill arm, on the command agent asking the STAND-IN PROVIDER up (not a
// model) with the user message say; cases are its cases' CUE lines and
// policy its policy. It returns the repository's root and the suite's
// folder.
func standinReuseSuite(t *testing.T, up *standin.Server, name, say string, trials int, cases, policy string) (root, dir string) {
	ask := `wget -q -O- --header \"x-api-key: $SKILLGATE_MODEL_KEY\" --header 'content-type: application/json' --post-data '{\"model\":\"m\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"` + say + `\"}]}' $SKILLGATE_MODEL_URL/v1/messages`
	root = writeRepo(t, map[string]string{
		"s/skill/SKILL.md": "---\nname: s\ndescription: A test skill.\n---\n",
		"s/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "` + name + `"
	skills: s: path: "skill"
	agent: agents.command & {
		provider:      "anthropic"
		upstream:      "` + up.URL + `"
		credentialEnv: "SKILLGATE_TEST_KEY"
		command: ["sh", "-c", "` + ask + `"]
	}
	trials: ` + fmt.Sprint(trials) + `
	arms: {
		none: {}
		forced: {skills: ["s"], activation: "forced"}
	}
	cases: {
` + cases + `	}
	` + policy + `
}
`,
	})
	return root, filepath.Join(root, "s")
}
