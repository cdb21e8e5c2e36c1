package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline"
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

// fakeJudge answers from a function of the prompt and counts its calls.
type fakeJudge struct {
	mu    sync.Mutex
	calls int
	reply func(prompt string) string
}

func (f *fakeJudge) Ask(_ context.Context, prompt string) (string, JudgeUsage, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	return f.reply(prompt), JudgeUsage{Model: "fake"}, nil
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
func storeRollout(t *testing.T, store *Store, p *pipeline.Plan, c pipeline.Cell, answer string, files map[string]string) {
	t.Helper()
	staged, err := store.Stage()
	if err != nil {
		t.Fatal(err)
	}
	ro := &Rollout{Key: c.Rollout, Plan: p.Digest, Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Status: StatusCompleted, Answer: answer, Changes: []Change{}}
	for rel, body := range files {
		full := filepath.Join(staged, DirWorkspace, rel)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		ro.Changes = append(ro.Changes, Change{Path: rel, Kind: ChangeAdded})
	}
	if err := store.Commit(staged, ro); err != nil {
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
	p, err := pipeline.CompileDir(dir)
	if err != nil {
		t.Fatal(pipeline.PrintError(err, root))
	}
	out := t.TempDir()
	store, err := OpenStore(out)
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]pipeline.Cell{}
	for _, c := range p.Cells {
		cells[c.ID] = c
		answer := map[string]string{"forced": "MARKED answer, per skillomega", "none": "plain answer"}[c.Arm]
		if c.ID == "a/none/2" {
			answer = "nothing" // fails its assertion
		}
		storeRollout(t, store, p, c, answer, map[string]string{"out.txt": map[string]string{"forced": "tidy notes\n", "none": "rough notes\n"}[c.Arm]})
	}
	opts := Options{Out: out, SuiteDir: dir, Jobs: 3}
	if _, err := Grade(context.Background(), p, p.Cells, opts); err != nil {
		t.Fatal(err)
	}
	invalidFor := pipeline.CandidateID(cells["a/forced/2"])
	judge := &fakeJudge{reply: func(prompt string) string {
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
	n, err := JudgeCells(context.Background(), p, judge, opts)
	if err != nil || n != 4 || judge.count() != 4 {
		t.Fatalf("judged %d (%d calls), %v; want the 4 cells of case a\n%s", n, judge.count(), err, log.String())
	}
	if !strings.Contains(log.String(), "a/forced/2: judge reply invalid") {
		t.Errorf("log:\n%s", log.String())
	}
	if err := os.WriteFile(filepath.Join(out, FilePlan), p.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	rep, err := Report(out)
	if err != nil {
		t.Fatal(err)
	}
	results, err := Results(p, store)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]pipeline.CellResult{}
	for _, r := range results {
		by[r.Cell] = r
	}
	judgeChecks := func(r pipeline.CellResult) (n int) {
		for _, ch := range r.Checks {
			if ch.Kind == pipeline.CheckJudge {
				n++
			}
		}
		return n
	}
	if r := by["a/forced/1"]; !r.Passed || r.Judge == nil || !r.Judge.Valid || judgeChecks(r) != 2 || r.Judge.Candidate != pipeline.CandidateID(cells["a/forced/1"]) {
		t.Errorf("a/forced/1: %+v", r)
	}
	if r := by["a/forced/2"]; r.Status != pipeline.StatusInvalid || r.Passed || !strings.Contains(r.Error, "judge: criterion 1 has no result") || r.Judge.Status != StatusCompleted {
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
	if rep.Verdict.Verdict != pipeline.VerdictIncomplete || !strings.Contains(strings.Join(rep.Verdict.Reasons, ","), "INVALID 1 cells") {
		t.Errorf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
	for _, a := range rep.Arms {
		if a.Name == "forced" && a.Metrics[pipeline.MetricInvalidRun].Value != 0.25 {
			t.Errorf("forced invalidRun %+v", a.Metrics[pipeline.MetricInvalidRun])
		}
	}
	// Packets and judgements are stored by grade key; no packet names the skill.
	for _, id := range []string{"a/forced/1", "a/forced/2", "a/none/1", "a/none/2"} {
		key := cells[id].Grade.Encoded()
		pk, err := os.ReadFile(store.PacketPath(key))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(pk, []byte("skillomega")) || bytes.Contains(pk, []byte("forced")) || !json.Valid(pk) {
			t.Errorf("packet of %s:\n%s", id, pk)
		}
		if jd, ok, err := store.Judgement(key); err != nil || !ok || jd.Mode != "rubric" || jd.Cells[0] != id {
			t.Errorf("judgement of %s: %+v %v %v", id, jd, ok, err)
		}
	}

	// A rerun asks nothing: every judged grade is stored.
	if n, err := JudgeCells(context.Background(), p, judge, opts); err != nil || n != 0 || judge.count() != 4 {
		t.Errorf("rerun judged %d (%d calls), %v", n, judge.count(), err)
	}
	// A cell graded but not judged (an interrupted run) is not a result:
	// the report is INCOMPLETE until it is judged; its stored judgement is
	// then reused without asking again.
	if err := os.Remove(store.GradePath(cells["a/none/1"].Grade)); err != nil {
		t.Fatal(err)
	}
	if _, err := Grade(context.Background(), p, p.Cells, opts); err != nil {
		t.Fatal(err)
	}
	rep, err = Report(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rep.Verdict.Reasons, ","), "INCOMPLETE 1 cells not judged") {
		t.Errorf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
	if n, err := JudgeCells(context.Background(), p, judge, opts); err != nil || n != 1 || judge.count() != 4 {
		t.Errorf("rejudge judged %d (%d calls), %v: want the stored judgement applied", n, judge.count(), err)
	}
	if r, _, _ := store.Grade(cells["a/none/1"].Grade); r == nil || r.Judge == nil || r.Passed {
		t.Errorf("a/none/1 after rejudging: %+v", r)
	}
}

// TestJudgeCommand: the command judge reads {"prompt", "packet"} on stdin
// and replies on stdout, within its timeout.
func TestJudgeCommand(t *testing.T) {
	dir := t.TempDir()
	script := "cat > stdin.json; echo '{\"winner\": \"B\"}'"
	j := &commandJudge{argv: []string{"sh", "-c", script}, dir: dir, timeout: 10 * time.Second}
	jr := &judgeRun{judge: j}
	reply, _, err := jr.ask(context.Background(), "key", "the prompt", []byte(`{"task": {"prompt": "x"}}`))
	if err != nil || strings.TrimSpace(reply) != `{"winner": "B"}` {
		t.Fatalf("reply %q, %v", reply, err)
	}
	var in CommandJudgeInput
	b, _ := os.ReadFile(filepath.Join(dir, "stdin.json"))
	if err := json.Unmarshal(b, &in); err != nil || in.Prompt != "the prompt" || string(in.Packet) != `{"task":{"prompt":"x"}}` {
		t.Errorf("stdin %s: %+v %v", b, in, err)
	}
	j = &commandJudge{argv: []string{"sh", "-c", "echo oops >&2; exit 3"}, dir: dir, timeout: 10 * time.Second}
	if _, _, err := j.Ask(context.Background(), "p"); err == nil || !strings.Contains(err.Error(), "exit status 3: oops") {
		t.Errorf("failing command: %v", err)
	}
	j = &commandJudge{argv: []string{"sleep", "10"}, dir: dir, timeout: 200 * time.Millisecond}
	start := time.Now()
	if _, _, err := j.Ask(context.Background(), "p"); err == nil || !strings.Contains(err.Error(), "timed out") || time.Since(start) > 5*time.Second {
		t.Errorf("slow command: %v after %s", err, time.Since(start))
	}
}

// TestJudgeHTTPProviders: the anthropic and openai judges call the host's
// upstream with the key from credentialEnv, non-streaming; a missing key is
// a clear error before anything runs.
func TestJudgeHTTPProviders(t *testing.T) {
	var got struct {
		path, key, auth, version string
		body                     map[string]any
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.path, got.key, got.auth, got.version = r.URL.Path, r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"), r.Header.Get("Anthropic-Version")
		b, _ := io.ReadAll(r.Body)
		got.body = nil
		json.Unmarshal(b, &got.body)
		switch r.URL.Path {
		case "/v1/messages":
			fmt.Fprint(w, `{"model": "claude-x", "content": [{"type": "text", "text": "{\"winner\": \"A\"}"}], "usage": {"input_tokens": 12, "output_tokens": 3}}`)
		case "/v1/responses":
			fmt.Fprint(w, `{"model": "gpt-x", "status": "completed", "output": [{"type": "reasoning"}, {"type": "message", "content": [{"type": "output_text", "text": "{\"winner\": \"tie\"}"}]}], "usage": {"input_tokens": 20, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 5}}}`)
		default:
			http.Error(w, "no", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	t.Setenv("JUDGE_TEST_KEY", "sk-test-123")
	plan := func(provider string) *pipeline.Plan {
		return &pipeline.Plan{Limits: pipeline.PlanLimits{Limits: pipeline.Limits{Timeout: "10s"}},
			Judge: &pipeline.PlanJudge{Judge: pipeline.Judge{Provider: provider, Model: "m1", Upstream: srv.URL + "/", CredentialEnv: "JUDGE_TEST_KEY"}}}
	}
	j, closeJ, err := NewJudge(plan("anthropic"), "")
	if err != nil {
		t.Fatal(err)
	}
	defer closeJ()
	reply, u, err := j.Ask(context.Background(), "judge this")
	if err != nil || reply != `{"winner": "A"}` || u.Model != "claude-x" || u.Tokens == nil || u.Tokens.Input != 12 {
		t.Errorf("anthropic: %q %+v %v", reply, u, err)
	}
	msgs, _ := got.body["messages"].([]any)
	if got.path != "/v1/messages" || got.key != "sk-test-123" || got.version == "" || got.body["model"] != "m1" || got.body["stream"] != nil || len(msgs) != 1 {
		t.Errorf("anthropic request: %+v", got)
	}
	j, _, err = NewJudge(plan("openai"), "")
	if err != nil {
		t.Fatal(err)
	}
	reply, u, err = j.Ask(context.Background(), "judge this")
	if err != nil || reply != `{"winner": "tie"}` || u.Tokens == nil || u.Tokens.Input != 15 || u.Tokens.CacheRead != 5 {
		t.Errorf("openai: %q %+v %v", reply, u, err)
	}
	if got.path != "/v1/responses" || got.auth != "Bearer sk-test-123" || got.body["input"] != "judge this" {
		t.Errorf("openai request: %+v", got)
	}
	p := plan("anthropic")
	p.Judge.CredentialEnv = "JUDGE_TEST_UNSET_KEY"
	if _, _, err := NewJudge(p, ""); err == nil || !strings.Contains(err.Error(), "JUDGE_TEST_UNSET_KEY is not set") {
		t.Errorf("missing key: %v", err)
	}
	p = plan("openai")
	p.Judge.Upstream = ""
	if _, _, err := NewJudge(p, ""); err == nil || !strings.Contains(err.Error(), "judge.upstream") {
		t.Errorf("missing upstream: %v", err)
	}
	// An HTTP error is an error, not a reply.
	mj := &messagesJudge{client: srv.Client(), url: srv.URL + "/nope", model: "m", timeout: 5 * time.Second}
	if _, _, err := mj.Ask(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("404: %v", err)
	}
}

// TestJudgeScriptedGateway: the scripted judge is the scripted model behind
// a gateway on a unix socket, asked with Anthropic Messages requests.
func TestJudgeScriptedGateway(t *testing.T) {
	marked := `"A": {` + "\n" + `    "answer": "MARKED`
	text := func(s string) *string { return &s }
	p := &pipeline.Plan{Limits: pipeline.PlanLimits{Limits: pipeline.Limits{Timeout: "10s"}},
		Judge: &pipeline.PlanJudge{Judge: pipeline.Judge{Provider: "scripted", Script: &pipeline.Script{Model: "judge-stand-in", Rules: []pipeline.ScriptRule{
			{When: &pipeline.ScriptWhen{Contains: &marked}, Reply: []pipeline.ScriptBlock{{Text: text(`{"winner": "A"}`)}}, Usage: pipeline.ScriptUsage{Input: 7, Output: 2}},
			{Reply: []pipeline.ScriptBlock{{Text: text(`{"winner": "B"}`)}}, Usage: pipeline.ScriptUsage{Input: 7, Output: 2}},
		}}}}}
	j, closeJ, err := NewJudge(p, "")
	if err != nil {
		t.Fatal(err)
	}
	pk := pipeline.EncodePacket(pipeline.PairwisePacket{A: pipeline.PacketAttempt{Answer: "MARKED x"}, B: pipeline.PacketAttempt{Answer: "PLAIN"}})
	reply, u, err := j.Ask(context.Background(), pipeline.RenderJudgePrompt("Compare.\n\n{{packet}}", pk))
	if err != nil || reply != `{"winner": "A"}` || u.Model != "judge-stand-in" || u.Tokens.Output != 2 {
		t.Errorf("reply %q %+v %v", reply, u, err)
	}
	pk = pipeline.EncodePacket(pipeline.PairwisePacket{A: pipeline.PacketAttempt{Answer: "PLAIN"}, B: pipeline.PacketAttempt{Answer: "MARKED x"}})
	if reply, _, err := j.Ask(context.Background(), pipeline.RenderJudgePrompt("Compare.\n\n{{packet}}", pk)); err != nil || reply != `{"winner": "B"}` {
		t.Errorf("reply %q %v", reply, err)
	}
	closeJ()
	if _, _, err := j.Ask(context.Background(), "x"); err == nil {
		t.Error("asked a closed judge")
	}
}

// judgeRunSuite copies testdata/judge/efficacy into a fresh repository
// with judgeCue as its judge.cue and compiles it.
func judgeRunSuite(t *testing.T, e *Engine, dir, judgeCue string) *pipeline.Plan {
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
	p, err := pipeline.CompileDir(dir)
	if err != nil {
		t.Fatal(pipeline.PrintError(err, filepath.Dir(dir)))
	}
	return p
}

func evaluate(t *testing.T, p *pipeline.Plan, dir, out string) (*Summary, *pipeline.Report) {
	t.Helper()
	var log bytes.Buffer
	sum, rep, err := Evaluate(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 8, Log: &log})
	t.Logf("evaluate:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
	return sum, rep
}

func rule(t *testing.T, rep *pipeline.Report, name string) pipeline.RuleOutcome {
	t.Helper()
	for _, r := range rep.Verdict.Rules {
		if r.Rule == name {
			return r
		}
	}
	t.Fatalf("no rule %s in %+v", name, rep.Verdict.Rules)
	return pipeline.RuleOutcome{}
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
	e := testEngine(t)
	pair := pipeline.Pair{Candidate: "forced", Baseline: "none"}
	wins := func(seed int64, caseID string) (n int, losses []int) {
		for trial := 1; trial <= 5; trial++ {
			if pipeline.PairwiseOrder(seed, caseID, trial, pair) == pipeline.PositionA {
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
	t.Cleanup(func() { e.RemoveImages(context.Background(), LabelSuite+"="+p.Suite.Name) })
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
		want := pipeline.PairwiseWin
		if r.First == pipeline.PositionB {
			want = pipeline.PairwiseLoss
		}
		if r.Outcome != want || r.Orders != nil || r.First != pipeline.PairwiseOrder(seed, r.Case, r.Trial, pair) {
			t.Errorf("%s/%d: %+v, want %s", r.Case, r.Trial, r, want)
		}
	}
	if count["one"][pipeline.PairwiseWin] != winsOne || count["one"][pipeline.PairwiseLoss] != 1 || count["two"][pipeline.PairwiseWin] != winsTwo {
		t.Errorf("outcomes %v (seed %d)", count, seed)
	}
	eff := rule(t, rep, "efficacy")
	if eff.Met || strings.Join(eff.Reasons, ",") != "EFFICACY two" || strings.Join(eff.Flags, ",") != fmt.Sprintf("REVIEW one/%d", lossesOne[0])+flagsOf("two", seed, pair) {
		t.Errorf("efficacy %+v", eff)
	}
	if !strings.Contains(eff.Detail, "1 of 2 cases pass") || !strings.Contains(eff.Detail, "one 4W/0T/1L") {
		t.Errorf("efficacy detail %q", eff.Detail)
	}
	if rep.Verdict.Verdict != pipeline.VerdictFail || strings.Join(rep.Verdict.Reasons, ",") != "EFFICACY two" {
		t.Errorf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
	store := &Store{Dir: out}
	packets, _ := filepath.Glob(filepath.Join(out, storePackets, "*.json"))
	judgements, _ := filepath.Glob(filepath.Join(out, storeJudgements, "*.json"))
	if len(packets) != 10 || len(judgements) != 10 {
		t.Errorf("%d packets, %d judgements stored; want 10 each", len(packets), len(judgements))
	}
	for _, f := range packets {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("skillomega")) || bytes.Contains(b, []byte("Omega")) || !bytes.Contains(b, []byte("MARKED answer, as [redacted] asks")) || !bytes.Contains(b, []byte("+tidy notes")) {
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
	_ = store

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
		if r.Outcome != pipeline.PairwiseTie || len(r.Orders) != 2 || r.Orders[0] != pipeline.PairwiseWin || r.Orders[1] != pipeline.PairwiseLoss {
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
	if rep.Verdict.Verdict != pipeline.VerdictFail {
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
	if rep.Verdict.Verdict != pipeline.VerdictPass {
		t.Errorf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
}

// flagsOf lists the efficacy flags of a case's losses, after a comma.
func flagsOf(caseID string, seed int64, pair pipeline.Pair) string {
	s := ""
	for trial := 1; trial <= 5; trial++ {
		if pipeline.PairwiseOrder(seed, caseID, trial, pair) == pipeline.PositionB {
			s += fmt.Sprintf(",REVIEW %s/%d", caseID, trial)
		}
	}
	return s
}
