package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/judge"
	"github.com/skillgate/skillgate/runner/store"
)

// TestChrisbanesExample runs two cases of suites/chrisbanes-example (a
// task and a no-change control, every arm) for real (the real Claude Code
// CLI, its model and judge the suite's scripted stand-ins) and
// checks their outputs under chrisbanes/; regrades it after an
// expectations.json edit, leaving every stored file as it was; and builds
// the rejudged report only when each packet has exactly one rejudgement.
func TestChrisbanesExample(t *testing.T) {
	dockertest.Engine(t)
	src, _ := filepath.Abs("../suites/chrisbanes-example")
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repo, "example")
	copyTree(t, src, dir)
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, "."))
	}
	out := t.TempDir()
	var log bytes.Buffer
	sum, r, err := Evaluate(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 6, Log: &log, Cases: []string{"benchmark-comparison-direct", "benchmark-comparison-negative"}})
	if err != nil || !sum.Complete() {
		t.Fatalf("evaluate: %v %+v\n%s", err, sum, log.String())
	}
	// The review case is not selected: the verdict cannot be complete.
	if r.Verdict.Verdict != verdict.VerdictIncomplete || strings.Join(r.Verdict.Reasons, ",") != "INCOMPLETE 3 cells not run" {
		t.Errorf("verdict %s %v", r.Verdict.Verdict, r.Verdict.Reasons)
	}
	score, err := os.ReadFile(filepath.Join(out, report.DirChrisbanes, report.FileChrisbanesScorecard))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| `benchmark-comparison` | 1 | 0.0% | 100.0% | 100.0% | 100.0% | 100.0% | 100.0% |",
		"- forced_uplift: PASS\n- automatic_retention: PASS\n- routing_precision: PASS\n- routing_recall: PASS\n- negative_controls: PASS\n- forbidden_actions: PASS\n",
	} {
		if !strings.Contains(string(score), want) {
			t.Errorf("scorecard lacks %q:\n%s", want, score)
		}
	}
	// skillgate report rebuilds their files byte for byte.
	written := checksums(t, out, report.DirChrisbanes)
	if len(written) != 3 {
		t.Errorf("chrisbanes files: %v", written)
	}
	if _, err := Report(out); err != nil {
		t.Fatal(err)
	}
	for f, sum := range checksums(t, out, report.DirChrisbanes) {
		if written[f] != sum {
			t.Errorf("report rebuilt %s with other bytes", f)
		}
	}

	// Regrade after their validator's expectations changed: the forced
	// direct case now misses "Build C"; nothing stored changes.
	before := checksums(t, out, ".")
	exp := filepath.Join(dir, "cases", "benchmark-comparison-direct", "expectations.json")
	b, _ := os.ReadFile(exp)
	if err := os.WriteFile(exp, bytes.Replace(b, []byte(`"Build B"]`), []byte(`"Build B", "Build C"]`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	p2, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := RegradeRun(context.Background(), out, p2, Options{SuiteDir: dir, Jobs: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.NeedRollout) != 0 {
		t.Errorf("need rollout: %v", g.NeedRollout)
	}
	records := report.ChrisbanesRegraded(p2, g.Report, g.Before, g.After)
	if err := report.WriteChrisbanes(filepath.Join(out, report.DirChrisbanesRegraded), records, p2, g.Verdict.Rules); err != nil {
		t.Fatal(err)
	}
	after := checksums(t, out, ".")
	for f, sum := range before {
		if after[f] != sum {
			t.Errorf("regrade changed %s", f)
		}
	}
	for f := range after {
		if _, ok := before[f]; !ok && !strings.HasPrefix(f, report.DirChrisbanesRegraded+string(filepath.Separator)) && !strings.HasPrefix(f, filepath.Join(store.DirGrades)+string(filepath.Separator)) {
			t.Errorf("regrade wrote %s", f)
		}
	}
	// The regraded scorecard's gates are the regraded results' verdict:
	// forced no longer passes the direct case, so its uplift is gone.
	if score, err := os.ReadFile(filepath.Join(out, report.DirChrisbanesRegraded, report.FileChrisbanesScorecard)); err != nil || !strings.Contains(string(score), "- forced_uplift: NOT MET\n") {
		t.Errorf("regraded scorecard (%v):\n%s", err, score)
	}
	for _, rec := range records {
		direct := rec["case_id"] == "benchmark-comparison-direct" && rec["arm"] != "none"
		if direct && (rec["outcome_pass"] != false || rec["judge_pass"] != true || rec["regraded_case_digest"] == rec["case_digest"]) {
			t.Errorf("regraded %s: outcome %v judge %v", rec["id"], rec["outcome_pass"], rec["judge_pass"])
		}
	}

	// The rejudged report: none without a rejudgement, one with exactly
	// one, none again once a second judge rejudged the same packets, or a
	// packet is gone.
	if _, _, _, err := RejudgedRun(out); err == nil || !strings.Contains(err.Error(), "has no rejudgement") {
		t.Errorf("rejudged report without rejudgements: %v", err)
	}
	strict := p.Judge.Judge
	strict.Script = &suite.Script{Model: "strict", Rules: []suite.ScriptRule{{Reply: []suite.ScriptBlock{{Text: ptr(`{"criteria": [{"criterion": 0, "pass": false, "evidence": "no"}, {"criterion": 1, "pass": false, "evidence": "no"}]}`)}}}}}
	if _, _, err := judge.Rejudge(context.Background(), out, strict, judge.RejudgeOptions{SuiteDir: dir, Jobs: 4}); err != nil {
		t.Fatal(err)
	}
	rp, rr, ev, err := RejudgedRun(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range report.ChrisbanesRecords(rp, rr, ev) {
		if rec["judge_pass"] != false || rec["outcome_pass"] != false {
			t.Errorf("rejudged %s: judge %v outcome %v, want the strict judge's fail", rec["id"], rec["judge_pass"], rec["outcome_pass"])
		}
	}
	second := strict
	second.Model = "second"
	if _, _, err := judge.Rejudge(context.Background(), out, second, judge.RejudgeOptions{SuiteDir: dir, Jobs: 4}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := RejudgedRun(out); err == nil || !strings.Contains(err.Error(), "has 2 rejudgements") {
		t.Errorf("rejudged report with two rejudgements per packet: %v", err)
	}
	packets, _ := filepath.Glob(filepath.Join(out, store.DirPackets, "*.json"))
	if err := os.Remove(packets[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := RejudgedRun(out); err == nil || !strings.Contains(err.Error(), "is not stored") {
		t.Errorf("rejudged report with a packet gone: %v", err)
	}
}
