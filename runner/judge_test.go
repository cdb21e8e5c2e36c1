package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/skillgate/skillgate/runner/judge"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

// writeRepo lays files out in a fresh repository and returns its root.
func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, body := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fakeJudge answers from a function of the prompt, counts its calls and
// keeps the prompts; fail, when set, makes a call fail instead.
type fakeJudge struct {
	mu      sync.Mutex
	calls   int
	prompts []string
	reply   func(prompt string) string
	fail    func(prompt string) error
}

func (f *fakeJudge) Ask(_ context.Context, prompt string) (string, store.JudgeUsage, error) {
	f.mu.Lock()
	f.calls++
	f.prompts = append(f.prompts, prompt)
	f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(prompt); err != nil {
			return "", store.JudgeUsage{}, err
		}
	}
	return f.reply(prompt), store.JudgeUsage{Model: "fake"}, nil
}

func (f *fakeJudge) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

const rubricSuite = `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
)

schema.#Suite & {
	name: "judgetest-rubric"
	skills: skillomega: path: "skill"
	agent: agents.command & {command: ["true"]}
	judge: {provider: "command", command: ["true"]}
	trials: 2
	arms: {
		none: {}
		forced: {skills: ["skillomega"], activation: "forced"}
	}
	cases: {
		a: {prompt: "Answer.", fixture: "fx", assert: [{answer: {contains: "answer"}}], rubric: ["Marked.", "Polite."]}
		b: {prompt: "Answer b.", fixture: "fx", assert: [{answer: {contains: "answer"}}]}
	}
	policy: uplift: {}
}
`

// storeRollout stores a completed rollout for a cell, as a run would.
func storeRollout(t *testing.T, st *store.Store, p *plan.Plan, c plan.Cell, answer string, files map[string]string) {
	t.Helper()
	staged, err := st.Stage()
	if err != nil {
		t.Fatal(err)
	}
	ro := &store.Rollout{Key: c.Rollout, Plan: p.Digest, Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Status: store.StatusCompleted, Answer: answer, Changes: []store.Change{}}
	for rel, body := range files {
		d := digest.FromString(body)
		os.MkdirAll(filepath.Join(staged, store.DirFiles), 0o755)
		if err := os.WriteFile(filepath.Join(staged, store.DirFiles, d.Encoded()), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		ro.Changes = append(ro.Changes, store.Change{Path: rel, Kind: store.ChangeAdded, Type: "file", Digest: d, Size: int64(len(body))})
	}
	if err := st.Commit(staged, ro); err != nil {
		t.Fatal(err)
	}
}

// TestJudgeRubricFromStore judges stored rollouts in rubric mode with a
// fake judge, no Docker: criteria become checks, a failing criterion fails
// the cell, a passing judge never passes a failed cell, an unreadable
// reply makes the cell invalid, and a rerun asks nothing again.
func TestJudgeRubricFromStore(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"s/suite.cue":      rubricSuite,
		"s/skill/SKILL.md": "---\nname: skillomega\ndescription: Omega zq7.\n---\n# Omega\n",
		"s/fx/README.md":   "# fixture\n",
	})
	dir := filepath.Join(root, "s")
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	out := t.TempDir()
	st, err := store.OpenStore(out)
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]plan.Cell{}
	for _, c := range p.Cells {
		cells[c.ID] = c
		answer := map[string]string{"forced": "MARKED answer, per skillomega", "none": "plain answer"}[c.Arm]
		if c.ID == "a/none/2" {
			answer = "nothing" // fails its assertion
		}
		storeRollout(t, st, p, c, answer, map[string]string{"out.txt": map[string]string{"forced": "tidy notes\n", "none": "rough notes\n"}[c.Arm]})
	}
	opts := Options{Out: out, SuiteDir: dir, Jobs: 3}
	if _, err := Grade(context.Background(), p, p.Cells, opts); err != nil {
		t.Fatal(err)
	}
	invalidFor := grade.CandidateID(cells["a/forced/2"])
	fake := &fakeJudge{reply: func(prompt string) string {
		switch {
		case strings.Contains(prompt, invalidFor):
			return `{"criteria": [{"criterion": 0, "pass": true}]}` // criterion 1 missing
		case strings.Contains(prompt, `"answer": "MARKED`), strings.Contains(prompt, `"answer": "nothing"`):
			return `{"criteria": [{"criterion": 0, "pass": true, "evidence": "marked"}, {"criterion": 1, "pass": true, "evidence": "polite"}]}`
		default:
			return "```json\n{\"criteria\": [{\"criterion\": 1, \"pass\": true}, {\"criterion\": 0, \"pass\": false, \"evidence\": \"not marked\"}]}\n```"
		}
	}}
	var log bytes.Buffer
	opts.Log = &log
	// Two cells are disputed and adjudicated by the same judge in fresh
	// calls: a/none/1 (its checks passed, a criterion failed) and a/none/2
	// (a check failed, every criterion passed).
	n, failed, err := judge.JudgeCells(context.Background(), p, fake, nil, opts.judging())
	if err != nil || n != 4 || failed != 0 || fake.count() != 6 {
		t.Fatalf("judged %d (%d calls, %d failed), %v; want the 4 cells of case a, 2 of them adjudicated\n%s", n, fake.count(), failed, err, log.String())
	}
	if !strings.Contains(log.String(), "a/forced/2: judge reply invalid") {
		t.Errorf("log:\n%s", log.String())
	}
	if err := os.WriteFile(filepath.Join(out, store.FilePlan), p.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	rep, err := Report(out)
	if err != nil {
		t.Fatal(err)
	}
	results, err := store.Results(p, st)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]grade.CellResult{}
	for _, r := range results {
		by[r.Cell] = r
	}
	judgeChecks := func(r grade.CellResult) (n int) {
		for _, ch := range r.Checks {
			if ch.Kind == grade.CheckJudge {
				n++
			}
		}
		return n
	}
	if r := by["a/forced/1"]; !r.Passed || r.Judge == nil || !r.Judge.Valid || judgeChecks(r) != 2 || r.Judge.Candidate != grade.CandidateID(cells["a/forced/1"]) {
		t.Errorf("a/forced/1: %+v", r)
	}
	if r := by["a/forced/2"]; r.Status != grade.StatusInvalid || r.Passed || !strings.Contains(r.Error, "judge: criterion 1 has no result") || r.Judge.Status != store.StatusCompleted {
		t.Errorf("a/forced/2: %+v", r)
	}
	if r := by["a/none/1"]; r.Passed || !r.Judge.DeterministicPassed || judgeChecks(r) != 2 {
		t.Errorf("a/none/1 (a failing criterion): %+v", r)
	}
	if r := by["a/none/2"]; r.Passed || r.Judge.DeterministicPassed || r.Judge.Score != 1 {
		t.Errorf("a/none/2 (failed deterministically, every criterion met): %+v", r)
	}
	if r := by["b/forced/1"]; r.Judge != nil || !r.Passed {
		t.Errorf("b/forced/1 has no rubric and is not judged: %+v", r)
	}
	if rep.Verdict.Verdict != verdict.VerdictIncomplete || !strings.Contains(strings.Join(rep.Verdict.Reasons, ","), "INVALID 1 cells") {
		t.Errorf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
	for _, a := range rep.Arms {
		if a.Name == "forced" && a.Metrics[verdict.MetricInvalidRun].Value != 0.25 {
			t.Errorf("forced invalidRun %+v", a.Metrics[verdict.MetricInvalidRun])
		}
	}
	// Packets and judgements are stored by grade key; no packet names the skill.
	for _, id := range []string{"a/forced/1", "a/forced/2", "a/none/1", "a/none/2"} {
		key := cells[id].Grade.Encoded()
		pk, err := os.ReadFile(st.PacketPath(key))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(pk, []byte("skillomega")) || bytes.Contains(pk, []byte("forced")) || !json.Valid(pk) {
			t.Errorf("packet of %s:\n%s", id, pk)
		}
		if jd, ok, err := st.Judgement(key); err != nil || !ok || jd.Mode != "rubric" || jd.Cells[0] != id {
			t.Errorf("judgement of %s: %+v %v %v", id, jd, ok, err)
		}
	}

	// A rerun asks nothing: every judged grade is stored.
	if n, _, err := judge.JudgeCells(context.Background(), p, fake, nil, opts.judging()); err != nil || n != 0 || fake.count() != 6 {
		t.Errorf("rerun judged %d (%d calls), %v", n, fake.count(), err)
	}
	// A cell graded but not judged (an interrupted run) is not a result:
	// the report is INCOMPLETE until it is judged; its stored judgement is
	// then reused without asking again.
	if err := os.Remove(st.GradePath(cells["a/none/1"].Grade)); err != nil {
		t.Fatal(err)
	}
	if _, err := Grade(context.Background(), p, p.Cells, opts); err != nil {
		t.Fatal(err)
	}
	rep, err = Report(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rep.Verdict.Reasons, ","), "INCOMPLETE 1 cells not judged: a/none/1 (not asked: judging did not finish)") {
		t.Errorf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
	if n, _, err := judge.JudgeCells(context.Background(), p, fake, nil, opts.judging()); err != nil || n != 1 || fake.count() != 6 {
		t.Errorf("rejudge judged %d (%d calls), %v: want the stored judgement applied", n, fake.count(), err)
	}
	if r, _, _ := st.Grade(cells["a/none/1"].Grade); r == nil || r.Judge == nil || r.Passed {
		t.Errorf("a/none/1 after rejudging: %+v", r)
	}
}

const adjudicationSuite = `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
)

schema.#Suite & {
	name: "judgetest-adjudication"
	skills: skillomega: path: "skill"
	agent: agents.command & {command: ["true"]}
	judge: {
		provider: "command"
		command: ["true"]
		adjudication: {
			cases: ["c"]
			judge: {provider: "command", command: ["true"], model: "adjudicator-1", template: "ADJUDICATE the criteria of this attempt:\n\n{{packet}}"}
		}
	}
	trials: 2
	arms: {
		none: {}
		forced: {skills: ["skillomega"], activation: "forced"}
	}
	cases: {
		a: {prompt: "Answer.", fixture: "fx", assert: [{answer: {contains: "answer"}}], rubric: ["Marked.", "Polite."]}
		c: {prompt: "Answer c.", fixture: "fx", assert: [{answer: {contains: "answer"}}], rubric: ["Marked."]}
	}
	policy: uplift: {}
}
`

// TestJudgeAdjudicationFromStore: the cells whose checks and judge
// disagree, and those of the case the suite names, go to the adjudicator
// in a fresh call that sees the blinded packet and never the first reply;
// its judgement is stored under its own key and decides the cell, never
// passing a failed check; a failed adjudication leaves the cell unjudged,
// named in an INCOMPLETE verdict, and the next run asks only the
// adjudicator; every report lists the disputes.
func TestJudgeAdjudicationFromStore(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"s/suite.cue":      adjudicationSuite,
		"s/skill/SKILL.md": "---\nname: skillomega\ndescription: Omega zq7.\n---\n# Omega\n",
		"s/fx/README.md":   "# fixture\n",
	})
	dir := filepath.Join(root, "s")
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	out := t.TempDir()
	st, err := store.OpenStore(out)
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]plan.Cell{}
	for _, c := range p.Cells {
		cells[c.ID] = c
		answer := map[string]string{"forced": "MARKED answer", "none": "plain answer"}[c.Arm]
		if c.ID == "a/none/2" {
			answer = "nothing marked" // fails its check
		}
		storeRollout(t, st, p, c, answer, nil)
	}
	opts := Options{Out: out, SuiteDir: dir, Jobs: 3}
	if _, err := Grade(context.Background(), p, p.Cells, opts); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, store.FilePlan), p.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	const firstEvidence = "FIRST-JUDGE-EVIDENCE"
	criteria := func(n int, pass bool) string {
		var cs []string
		for i := 0; i < n; i++ {
			cs = append(cs, fmt.Sprintf(`{"criterion": %d, "pass": %v, "evidence": "%s"}`, i, pass, firstEvidence))
		}
		return `{"criteria": [` + strings.Join(cs, ", ") + `]}`
	}
	fake := &fakeJudge{reply: func(prompt string) string {
		n := strings.Count(prompt, `"index": `)
		return criteria(n, strings.Contains(prompt, `"answer": "MARKED`) || strings.Contains(prompt, `"answer": "nothing`))
	}}
	// The adjudicator passes every criterion; its first call about
	// a/none/1 fails.
	failFor := grade.CandidateID(cells["a/none/1"])
	adjudicator := &fakeJudge{
		reply: func(prompt string) string {
			return strings.ReplaceAll(criteria(strings.Count(prompt, `"index": `), true), firstEvidence, "adjudicated")
		},
		fail: func(prompt string) error {
			if strings.Contains(prompt, failFor) {
				return errors.New("HTTP 503: overloaded")
			}
			return nil
		},
	}
	var log bytes.Buffer
	opts.Log = &log
	n, failed, err := judge.JudgeCells(context.Background(), p, fake, adjudicator, opts.judging())
	// Disputed: a/none/1 (checks passed, the judge failed one), a/none/2
	// (a check failed, the judge passed all) and the four cells of c.
	if err != nil || n != 7 || failed != 1 || fake.count() != 8 || adjudicator.count() != 6 {
		t.Fatalf("judged %d, %d failed, %d judge and %d adjudicator calls, %v\n%s", n, failed, fake.count(), adjudicator.count(), err, log.String())
	}
	for _, prompt := range adjudicator.prompts {
		if !strings.HasPrefix(prompt, "ADJUDICATE the criteria of this attempt:\n\n{") || strings.Contains(prompt, firstEvidence) || strings.Contains(prompt, "skillomega") || strings.Contains(prompt, "forced") {
			t.Errorf("adjudicator prompt:\n%s", prompt)
		}
	}
	rep, err := Report(out)
	if err != nil {
		t.Fatal(err)
	}
	reasons := strings.Join(rep.Verdict.Reasons, ",")
	if rep.Verdict.Verdict != verdict.VerdictIncomplete || !strings.Contains(reasons, "INCOMPLETE 1 cells not judged: a/none/1 (adjudicator: HTTP 503: overloaded)") {
		t.Errorf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
	if _, ok, _ := st.JudgeFailure(grade.AdjudicationKey(cells["a/none/1"].Grade).Encoded()); !ok {
		t.Error("the failed adjudication is not stored")
	}

	// The next run asks the adjudicator about a/none/1 alone.
	adjudicator.fail = nil
	n, failed, err = judge.JudgeCells(context.Background(), p, fake, adjudicator, opts.judging())
	if err != nil || n != 1 || failed != 0 || fake.count() != 8 || adjudicator.count() != 7 {
		t.Fatalf("rerun judged %d, %d failed, %d judge and %d adjudicator calls, %v", n, failed, fake.count(), adjudicator.count(), err)
	}
	if _, ok, _ := st.JudgeFailure(grade.AdjudicationKey(cells["a/none/1"].Grade).Encoded()); ok {
		t.Error("the failure outlived the adjudication that succeeded")
	}
	rep, err = Report(out)
	if err != nil {
		t.Fatal(err)
	}
	results, _ := store.Results(p, st)
	by := map[string]grade.CellResult{}
	for _, r := range results {
		by[r.Cell] = r
	}
	// The adjudicator decides: a/none/1 passes; a/none/2 still fails its check.
	if r := by["a/none/1"]; !r.Passed || r.Judge.Dispute == nil || !r.Judge.Dispute.Adjudicated || r.Judge.Criteria[0].Pass {
		t.Errorf("a/none/1: %+v", r.Judge)
	}
	if r := by["a/none/2"]; r.Passed || r.Judge.Dispute.Decision() != grade.DecisionPass {
		t.Errorf("a/none/2 passed a failed check: %+v", r)
	}
	if r := by["a/forced/1"]; r.Judge.Dispute != nil || !r.Passed {
		t.Errorf("a/forced/1 is not disputed: %+v", r.Judge)
	}
	if r := by["c/forced/2"]; r.Judge.Dispute == nil || r.Judge.Dispute.Kind != grade.DisputeNamed {
		t.Errorf("c/forced/2 is named: %+v", r.Judge)
	}
	// The adjudication is stored beside the first judgement.
	akey := grade.AdjudicationKey(cells["a/none/2"].Grade).Encoded()
	if jd, ok, err := st.Judgement(akey); err != nil || !ok || jd.Role != store.RoleAdjudicator || jd.Cells[0] != "a/none/2" {
		t.Errorf("adjudication of a/none/2: %+v %v %v", jd, ok, err)
	}
	if jd, ok, _ := st.Judgement(cells["a/none/2"].Grade.Encoded()); !ok || jd.Role != "" || !strings.Contains(jd.Reply, firstEvidence) {
		t.Errorf("first judgement of a/none/2: %+v", jd)
	}
	if rep.Verdict.Verdict == verdict.VerdictIncomplete || rep.Adjudication == nil || len(rep.Adjudication.Disputed) != 6 || rep.Adjudication.Model != "adjudicator-1" {
		t.Fatalf("report: %s %v, adjudication %+v", rep.Verdict.Verdict, rep.Verdict.Reasons, rep.Adjudication)
	}
	raw, err := os.ReadFile(filepath.Join(out, report.FileVerdictJSON))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Adjudication struct {
			Blinded    bool   `json:"blinded"`
			JudgeModel string `json:"judge_model"`
			Disputed   []struct {
				Case, Arm, Disagreed, Decision string
				Trial                          int
			} `json:"disputed"`
		} `json:"adjudication"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if !v.Adjudication.Blinded || v.Adjudication.JudgeModel != "adjudicator-1" || len(v.Adjudication.Disputed) != 6 {
		t.Fatalf("verdict.json adjudication %+v", v.Adjudication)
	}
	if d := v.Adjudication.Disputed[0]; d.Case != "a" || d.Arm != "none" || d.Trial != 1 || d.Decision != grade.DecisionPass || !strings.Contains(d.Disagreed, "the judge failed rubric 0: Marked.") {
		t.Errorf("first dispute %+v", d)
	}
	for _, f := range []string{report.FileReportMD, report.FileReportHTML} {
		b, _ := os.ReadFile(filepath.Join(out, f))
		if !bytes.Contains(b, []byte("Disputed answers")) || !bytes.Contains(b, []byte("c/none/1")) {
			t.Errorf("%s lacks the disputes", f)
		}
	}
}

// judgeRunSuite copies testdata/judge/efficacy into a fresh repository
// with judgeCue as its judge.cue and compiles it.
func judgeRunSuite(t *testing.T, e *docker.Engine, dir, judgeCue string) *plan.Plan {
	t.Helper()
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		copyTree(t, filepath.Join("..", "testdata", "judge", "efficacy"), dir)
		if err := os.Mkdir(filepath.Join(filepath.Dir(dir), ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "judge.cue"), []byte(judgeCue), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, filepath.Dir(dir)))
	}
	return p
}

func evaluate(t *testing.T, p *plan.Plan, dir, out string) (*Summary, *verdict.Report) {
	t.Helper()
	var log bytes.Buffer
	sum, rep, err := Evaluate(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 8, Log: &log})
	t.Logf("evaluate:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
	return sum, rep
}

func rule(t *testing.T, rep *verdict.Report, name string) verdict.RuleOutcome {
	t.Helper()
	for _, r := range rep.Verdict.Rules {
		if r.Rule == name {
			return r
		}
	}
	t.Fatalf("no rule %s in %+v", name, rep.Verdict.Rules)
	return verdict.RuleOutcome{}
}

// TestJudgeEfficacyPairwise runs a suite for real with the scripted model
// as a pairwise judge, then changes only the judge twice: each time the
// cells are regraded and judged again with no new rollout.
//
// 1. The judge picks the marked attempt when it is shown as A, and A
// (the baseline) when the marked one is B: the candidate wins exactly the
// trials the seeded order shows it first. The seed is chosen so case one
// wins 4 of 5 (passes, its loss flagged) and case two at most 2 (fails):
// the skill's efficacy verdict is red.
// 2. A position-biased judge (always "A") with swap: every pair
// disagrees, agreement is 0, judgeAgreement is not met, every pair a TIE.
// 3. A rubric judge: the marked answers meet the criterion, the plain
// ones fail it, and the packets never name the skill.
func TestJudgeEfficacyPairwise(t *testing.T) {
	e := dockertest.Engine(t)
	pair := suite.Pair{Candidate: "forced", Baseline: "none"}
	wins := func(seed int64, caseID string) (n int, losses []int) {
		for trial := 1; trial <= 5; trial++ {
			if grade.PairwiseOrder(seed, caseID, trial, pair) == grade.PositionA {
				n++
			} else {
				losses = append(losses, trial)
			}
		}
		return n, losses
	}
	seed := int64(1)
	for ; seed < 100000; seed++ {
		one, _ := wins(seed, "one")
		two, _ := wins(seed, "two")
		if one == 4 && two <= 2 {
			break
		}
	}
	winsOne, lossesOne := wins(seed, "one")
	winsTwo, _ := wins(seed, "two")

	dir := filepath.Join(t.TempDir(), "suite")
	p := judgeRunSuite(t, e, dir, fmt.Sprintf(`package t

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	seed: %d
	judge: {
		provider: "scripted"
		mode:     "pairwise"
		pairs: [{candidate: "forced", baseline: "none"}]
		script: rules: [
			{when: contains: "\"A\": {\n    \"answer\": \"MARKED", reply: [{text: "{\"winner\": \"A\", \"evidence\": \"A is marked\"}"}]},
			{when: contains: "\"B\": {\n    \"answer\": \"MARKED", reply: [{text: "{\"winner\": \"A\", \"evidence\": \"A came first\"}"}]},
			{reply: [{text: "{\"winner\": \"tie\"}"}]},
		]
	}
	policy: policies.efficacy
}
`, seed))
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"="+p.Suite.Name) })
	out := t.TempDir()
	sum, rep := evaluate(t, p, dir, out)
	if sum.Ran != len(p.Cells) || !sum.Complete() {
		t.Fatalf("summary %+v", sum)
	}
	if len(rep.Pairwise) != 10 {
		t.Fatalf("pairwise %+v", rep.Pairwise)
	}
	count := map[string]map[string]int{"one": {}, "two": {}}
	for _, r := range rep.Pairwise {
		count[r.Case][r.Outcome]++
		want := grade.PairwiseWin
		if r.First == grade.PositionB {
			want = grade.PairwiseLoss
		}
		if r.Outcome != want || r.Orders != nil || r.First != grade.PairwiseOrder(seed, r.Case, r.Trial, pair) {
			t.Errorf("%s/%d: %+v, want %s", r.Case, r.Trial, r, want)
		}
	}
	if count["one"][grade.PairwiseWin] != winsOne || count["one"][grade.PairwiseLoss] != 1 || count["two"][grade.PairwiseWin] != winsTwo {
		t.Errorf("outcomes %v (seed %d)", count, seed)
	}
	eff := rule(t, rep, "efficacy")
	if eff.Met || strings.Join(eff.Reasons, ",") != "EFFICACY two" || strings.Join(eff.Flags, ",") != fmt.Sprintf("REVIEW one/%d", lossesOne[0])+flagsOf("two", seed, pair) {
		t.Errorf("efficacy %+v", eff)
	}
	if !strings.Contains(eff.Detail, "1 of 2 cases pass") || !strings.Contains(eff.Detail, "one 4W/0T/1L") {
		t.Errorf("efficacy detail %q", eff.Detail)
	}
	if rep.Verdict.Verdict != verdict.VerdictFail || strings.Join(rep.Verdict.Reasons, ",") != "EFFICACY two" {
		t.Errorf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
	st := &store.Store{Dir: out}
	packets, _ := filepath.Glob(filepath.Join(out, store.DirPackets, "*.json"))
	judgements, _ := filepath.Glob(filepath.Join(out, store.DirJudgements, "*.json"))
	if len(packets) != 10 || len(judgements) != 10 {
		t.Errorf("%d packets, %d judgements stored; want 10 each", len(packets), len(judgements))
	}
	for _, f := range packets {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("skillomega")) || bytes.Contains(b, []byte("Omega")) || bytes.Contains(b, []byte("redacted")) || !bytes.Contains(b, []byte(`"MARKED answer\n"`)) || !bytes.Contains(b, []byte("+tidy notes")) {
			t.Errorf("packet %s:\n%s", f, b)
		}
	}
	// The report rebuilds from the store alone, judgements included.
	for _, f := range []string{"report.json", "verdict.json"} {
		os.Remove(filepath.Join(out, f))
	}
	rebuilt, err := Report(out)
	if err != nil || len(rebuilt.Pairwise) != 10 || rebuilt.Verdict.Verdict != rep.Verdict.Verdict {
		t.Errorf("rebuilt report: %v", err)
	}
	_ = st

	// 2. A position-biased judge, judged in both orders.
	p2 := judgeRunSuite(t, e, dir, fmt.Sprintf(`package t

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	seed: %d
	judge: {
		provider: "scripted"
		mode:     "pairwise"
		swap:     true
		pairs: [{candidate: "forced", baseline: "none"}]
		script: rules: [{reply: [{text: "{\"winner\": \"A\", \"evidence\": \"A\"}"}]}]
	}
	policy: policies.efficacy & {judgeAgreement: {}}
}
`, seed))
	sum, rep = evaluate(t, p2, dir, out)
	if sum.Ran != 0 || sum.Reused != len(p2.Cells) {
		t.Errorf("summary %+v: a judge change must not roll out again", sum)
	}
	if len(rep.Pairwise) != 10 {
		t.Fatalf("pairwise %+v", rep.Pairwise)
	}
	for _, r := range rep.Pairwise {
		if r.Outcome != grade.PairwiseTie || len(r.Orders) != 2 || r.Orders[0] != grade.PairwiseWin || r.Orders[1] != grade.PairwiseLoss {
			t.Errorf("%s/%d: %+v, want orders [WIN LOSS] and a TIE", r.Case, r.Trial, r)
		}
	}
	agree := rule(t, rep, "judgeAgreement")
	if agree.Met || !strings.Contains(agree.Detail, "0 of 10 swapped pairs agree") {
		t.Errorf("judgeAgreement %+v", agree)
	}
	if eff := rule(t, rep, "efficacy"); eff.Met || len(eff.Flags) != 0 {
		t.Errorf("efficacy with a biased judge %+v", eff)
	}
	if rep.Verdict.Verdict != verdict.VerdictFail {
		t.Errorf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}

	// 3. A rubric judge.
	p3 := judgeRunSuite(t, e, dir, `package t

import "skillgate.dev/schema"

schema.#Suite & {
	judge: {
		provider: "scripted"
		script: rules: [
			{when: contains: "\"answer\": \"MARKED", reply: [{text: "{\"criteria\": [{\"criterion\": 0, \"pass\": true, \"evidence\": \"marked\"}]}"}]},
			{reply: [{text: "{\"criteria\": [{\"criterion\": 0, \"pass\": false, \"evidence\": \"plain\"}]}"}]},
		]
	}
	policy: schema.#Policy & {uplift: {minPoints: 50}, invalidRun: {}}
}
`)
	sum, rep = evaluate(t, p3, dir, out)
	if sum.Ran != 0 {
		t.Errorf("summary %+v: a judge change must not roll out again", sum)
	}
	for _, c := range rep.Cases {
		for arm, trials := range c.Trials {
			for _, tr := range trials {
				if want := arm == "forced"; tr.Passed != want || (!want && (len(tr.Failed) != 1 || tr.Failed[0] != "rubric 0: The answer is marked.")) {
					t.Errorf("%s: passed %v, failed %v", tr.Cell, tr.Passed, tr.Failed)
				}
			}
		}
	}
	if rep.Verdict.Verdict != verdict.VerdictPass {
		t.Errorf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
}

// flagsOf lists the efficacy flags of a case's losses, after a comma.
func flagsOf(caseID string, seed int64, pair suite.Pair) string {
	s := ""
	for trial := 1; trial <= 5; trial++ {
		if grade.PairwiseOrder(seed, caseID, trial, pair) == grade.PositionB {
			s += fmt.Sprintf(",REVIEW %s/%d", caseID, trial)
		}
	}
	return s
}

const failureSuite = `package t

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
)

schema.#Suite & {
	name: "judgetest-failure"
	skills: skillomega: path: "skill"
	agent: agents.command & {
		command: ["sh", "-c", """
			if [ -n "$SKILLGATE_SKILLS_DIR" ]; then echo 'MARKED answer'; else echo 'PLAIN answer'; fi
			"""]
	}
	trials: 1
	limits: timeout: "20s"
	arms: {
		none: {}
		forced: {skills: ["skillomega"], activation: "forced"}
	}
	cases: a: {prompt: "Answer.", assert: [{answer: {contains: "answer"}}], rubric: ["The answer is marked."]}
	policy: schema.#Policy & {invalidRun: {}}
}
`

// TestJudgeFailureLeavesReport runs a suite for real whose judge fails (a
// command judge exiting 1, then an HTTP judge answering 500 from a server
// on 127.0.0.1): the run still writes the plan and every report, its
// verdict INCOMPLETE with a reason naming the cells and the judge's error
// (redacted), `skillgate report` rebuilds the same bytes from the store,
// and a rerun with the judge working again finishes the run without a new
// rollout.
func TestJudgeFailureLeavesReport(t *testing.T) {
	e := dockertest.Engine(t)
	root := writeRepo(t, map[string]string{
		"s/suite.cue":      failureSuite,
		"s/skill/SKILL.md": "---\nname: skillomega\ndescription: Omega zq7.\n---\n# Omega\n",
		"s/judge.sh": `#!/bin/sh
cat > /dev/null
if [ ! -f ok ]; then echo "the judge is down" >&2; exit 1; fi
echo '{"criteria": [{"criterion": 0, "pass": true, "evidence": "marked"}]}'
`,
	})
	dir := filepath.Join(root, "s")
	if err := os.Chmod(filepath.Join(dir, "judge.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	compile := func(judgeCue string) *plan.Plan {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "judge.cue"), []byte("package t\n\nimport \"skillgate.dev/schema\"\n\nschema.#Suite & {\n\tjudge: "+judgeCue+"\n}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := plan.CompileDir(dir)
		if err != nil {
			t.Fatal(suite.PrintError(err, root))
		}
		return p
	}
	reports := []string{store.FilePlan, report.FileVerdictJSON, report.FileReportJSON, report.FileReportMD, report.FileReportHTML, report.FileJUnitXML}
	// failedRun evaluates p, whose judge fails, and checks what it leaves.
	failedRun := func(p *plan.Plan, out, why string) {
		t.Helper()
		sum, rep := evaluate(t, p, dir, out)
		if !sum.Complete() {
			t.Fatalf("summary %+v", sum)
		}
		want := "INCOMPLETE 2 cells not judged: a/none/1, a/forced/1 (" + why + ")"
		if rep.Verdict.Verdict != verdict.VerdictIncomplete || rep.Verdict.ExitCode != 2 || !slices.Contains(rep.Verdict.Reasons, want) {
			t.Errorf("verdict %s (exit %d) %q, want the reason %q", rep.Verdict.Verdict, rep.Verdict.ExitCode, rep.Verdict.Reasons, want)
		}
		before := map[string][]byte{}
		for _, f := range reports {
			b, err := os.ReadFile(filepath.Join(out, f))
			if err != nil || len(b) == 0 {
				t.Fatalf("%s: %v", f, err)
			}
			before[f] = b
		}
		if !bytes.Contains(before[report.FileVerdictJSON], []byte(`"resumable": true`)) || !bytes.Contains(before[report.FileVerdictJSON], []byte("cells not judged: a/none/1")) {
			t.Errorf("verdict.json lacks the failure or is not resumable:\n%s", before[report.FileVerdictJSON])
		}
		for _, f := range []string{report.FileReportMD, report.FileReportHTML, report.FileJUnitXML} {
			if !bytes.Contains(before[f], []byte("cells not judged: a/none/1")) {
				t.Errorf("%s does not say which cells were not judged", f)
			}
		}
		failures, _ := filepath.Glob(filepath.Join(out, store.DirJudgeFailures, "*.json"))
		if len(failures) != 2 {
			t.Errorf("%d judge failures stored, want 2", len(failures))
		}
		// The report rebuilds from the store alone, the same bytes.
		for _, f := range reports[1:] {
			os.Remove(filepath.Join(out, f))
		}
		t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
		if _, err := Report(out); err != nil {
			t.Fatal(err)
		}
		for _, f := range reports {
			if b, _ := os.ReadFile(filepath.Join(out, f)); !bytes.Equal(b, before[f]) {
				t.Errorf("%s differs when rebuilt from the store", f)
			}
		}
		os.Unsetenv("DOCKER_HOST")
	}
	// finishedRun evaluates p again, its judge working.
	finishedRun := func(p *plan.Plan, out string) {
		t.Helper()
		sum, rep := evaluate(t, p, dir, out)
		if sum.Ran != 0 || sum.Reused != len(p.Cells) {
			t.Errorf("summary %+v: a rerun after a judge failure must not roll out again", sum)
		}
		if rep.Verdict.Verdict == verdict.VerdictIncomplete {
			t.Errorf("verdict %s %v after the judge came back", rep.Verdict.Verdict, rep.Verdict.Reasons)
		}
		if failures, _ := filepath.Glob(filepath.Join(out, store.DirJudgeFailures, "*.json")); len(failures) != 0 {
			t.Errorf("judge failures %v outlived the judgements", failures)
		}
	}

	// A command judge, its relative program in the suite folder, exits 1.
	p := compile(`{provider: "command", command: ["./judge.sh"]}`)
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"="+p.Suite.Name) })
	out := t.TempDir()
	failedRun(p, out, "judge command ./judge.sh: exit status 1: the judge is down")
	if err := os.WriteFile(filepath.Join(dir, "ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	finishedRun(p, out)

	// An HTTP judge answers 500, with its key in the body.
	var down sync.Mutex
	failing := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		down.Lock()
		defer down.Unlock()
		if failing {
			http.Error(w, "overloaded; key "+r.Header.Get("X-Api-Key")+" is fine", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, `{"model": "stand-in-judge", "content": [{"type": "text", "text": "{\"criteria\": [{\"criterion\": 0, \"pass\": true}]}"}]}`)
	}))
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("the stand-in judge listens on %s, not loopback", srv.URL)
	}
	t.Setenv("JUDGE_FAILURE_TEST_KEY", "sk-failure-test-secret")
	p = compile(fmt.Sprintf(`{provider: "anthropic", model: "stand-in", upstream: %q, credentialEnv: "JUDGE_FAILURE_TEST_KEY"}`, srv.URL))
	out = t.TempDir()
	failedRun(p, out, "judge: POST "+srv.URL+"/v1/messages: HTTP 500: overloaded; key [REDACTED] is fine")
	for _, f := range []string{report.FileVerdictJSON, report.FileReportJSON} {
		if b, _ := os.ReadFile(filepath.Join(out, f)); bytes.Contains(b, []byte("sk-failure-test-secret")) {
			t.Errorf("%s holds the judge's key", f)
		}
	}
	down.Lock()
	failing = false
	down.Unlock()
	finishedRun(p, out)
}

// TestEvaluateWritesPlanFirst: the plan is in the run folder before
// anything runs, so a run that stops at once (here on a judge whose key is
// not set) still leaves a folder `skillgate report` can report on.
func TestEvaluateWritesPlanFirst(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"s/suite.cue":      failureSuite,
		"s/judge.cue":      "package t\n\nimport \"skillgate.dev/schema\"\n\nschema.#Suite & {\n\tjudge: {provider: \"anthropic\", upstream: \"http://127.0.0.1:9\", credentialEnv: \"JUDGE_PLAN_FIRST_UNSET_KEY\"}\n}\n",
		"s/skill/SKILL.md": "---\nname: skillomega\ndescription: Omega zq7.\n---\n# Omega\n",
	})
	p, err := plan.CompileDir(filepath.Join(root, "s"))
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	out := filepath.Join(t.TempDir(), "run")
	_, _, err = Evaluate(context.Background(), p, Options{Out: out, SuiteDir: filepath.Join(root, "s")})
	if err == nil || !strings.Contains(err.Error(), "JUDGE_PLAN_FIRST_UNSET_KEY is not set") {
		t.Fatalf("evaluate: %v, want the missing key", err)
	}
	got, err := plan.ReadPlan(filepath.Join(out, store.FilePlan))
	if err != nil || got.Digest != p.Digest {
		t.Fatalf("plan.json: %v", err)
	}
	rep, err := Report(out)
	if err != nil || rep.Verdict.Verdict != verdict.VerdictIncomplete {
		t.Errorf("report of a run that never started: %v %+v", err, rep)
	}
}
