package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestSkillEvalExample runs gstack's call on suites/gstack-example for real
// (the real Claude Code CLI in its cells, the example's scripted model
// answering), on its safety task alone with one trial, to keep it short:
// calibration first (each arm quotes its own copy of the skill), then the
// task in before, after and none. The diet cut lost "Never change a file",
// so after fails the safety task: FAIL, exit 1, with verdict.json in
// gstack's shape and raw transcripts under runs/. --resume of the finished
// run starts nothing and gives the same verdict; --resume with other trials
// is refused.
func TestSkillEvalExample(t *testing.T) {
	if ok, err := condition("docker"); err != nil {
		t.Fatal(err)
	} else if !ok {
		t.Skip("no Docker engine")
	}
	ex, err := filepath.Abs(filepath.Join("..", "..", "suites", "gstack-example"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	call := []string{"skillgate", "skill-eval",
		"--arms", "before=" + filepath.Join(ex, "skill") + ",after=" + filepath.Join(ex, "skill-diet") + ",none",
		"--tasks", filepath.Join(ex, "fixtures", "notes-stats", "tasks.json"),
		"--host", "claude", "--model", "claude-sonnet-4-5", "--trials", "1", "--spend-cap", "1",
		"--tasks-only", "no-code-change", "--scripted", ex}
	if code := run(append(slices.Clone(call), "--out", out)); code != 1 {
		t.Fatalf("skill-eval exit %d, want 1 (FAIL)", code)
	}
	raw, err := os.ReadFile(filepath.Join(out, "verdict.json"))
	if err != nil {
		t.Fatal(err)
	}
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", "schema", "outputs", "gstack", "verdict.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("verdict.json against its schema: %v", err)
	}
	var v struct {
		Verdict      string
		Reasons      []string
		Trials       int
		Calibration  map[string]*bool
		Tasks        map[string]map[string][]*bool
		StandIn      string `json:"stand_in"`
		Adjudication struct {
			Blinded    bool
			JudgeModel *string `json:"judge_model"`
		}
		Arms map[string]struct {
			FilesLoaded map[string]int `json:"files_loaded"`
		}
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if v.Verdict != "FAIL" || !slices.Contains(v.Reasons, "SAFETY no-code-change") || v.Trials != 1 || v.StandIn == "" {
		t.Errorf("verdict %s %v, trials %d, stand-in %q:\n%s", v.Verdict, v.Reasons, v.Trials, v.StandIn, raw)
	}
	for _, k := range []string{"skill", "none", "shell"} {
		if c := v.Calibration[k]; c == nil || !*c {
			t.Errorf("calibration %s: %v, want true", k, c)
		}
	}
	// The sidecar's judge line was judged, blinded, by the suite's judge.
	if a := v.Adjudication; !a.Blinded || a.JudgeModel == nil || *a.JudgeModel != "scripted-gstack-judge" {
		t.Errorf("adjudication %+v, want blinded by scripted-gstack-judge", a)
	}
	if judged, _ := filepath.Glob(filepath.Join(out, "store", "judgements", "*")); len(judged) == 0 {
		t.Errorf("no judgement stored under %s", filepath.Join(out, "store", "judgements"))
	}
	task := v.Tasks["no-code-change"]
	if len(v.Tasks) != 1 || len(task["before"]) != 1 || task["before"][0] == nil || !*task["before"][0] || task["after"][0] == nil || *task["after"][0] {
		t.Errorf("tasks %s", raw)
	}
	if v.Arms["before"].FilesLoaded["SKILL.md"] < 1 {
		t.Errorf("before files_loaded %v, want SKILL.md read", v.Arms["before"].FilesLoaded)
	}
	for _, arm := range []string{"before", "after", "none"} {
		if _, err := os.Stat(filepath.Join(out, "runs", "no-code-change", arm, "1", "transcript.txt")); err != nil {
			t.Errorf("raw transcript: %v", err)
		}
	}

	rollouts := func() int {
		es, _ := os.ReadDir(filepath.Join(out, "store", "rollouts"))
		return len(es)
	}
	before := rollouts()
	if code := run(append(slices.Clone(call), "--resume", out)); code != 1 {
		t.Fatalf("skill-eval --resume exit %d, want 1", code)
	}
	if n := rollouts(); n != before {
		t.Errorf("--resume of a finished run stored %d rollouts, had %d", n, before)
	}
	again, _ := os.ReadFile(filepath.Join(out, "verdict.json"))
	if !bytes.Equal(again, raw) {
		t.Errorf("--resume changed verdict.json:\n%s", again)
	}
	trials := slices.Clone(call)
	trials[slices.Index(trials, "--trials")+1] = "2"
	if code := run(append(trials, "--resume", out)); code != 2 {
		t.Errorf("--resume with other trials: exit %d, want 2", code)
	}
	if code := run(append(slices.Clone(call), "--out", out)); code != 2 {
		t.Errorf("a second run into a folder that holds one: exit %d, want 2", code)
	}
}
