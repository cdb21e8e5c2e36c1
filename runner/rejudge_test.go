package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/judge"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// checksums maps every file under the run folder's given subfolders to its
// SHA-256.
func checksums(t *testing.T, out string, dirs ...string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(out, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			rel, _ := filepath.Rel(out, p)
			sums[rel] = hex.EncodeToString(s[:])
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return sums
}

func sameSums(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if len(before) != len(after) {
		t.Errorf("%s: %d files before, %d after", what, len(before), len(after))
	}
	for f, s := range before {
		if after[f] != s {
			t.Errorf("%s: %s changed", what, f)
		}
	}
}

// TestRejudge runs a suite for real with a scripted rubric judge that
// passes the marked (forced) answers, then rejudges its stored packets
// with a scripted judge that fails every criterion, with no Docker engine
// reachable: the rejudged verdict differs, the run's judgements, grades,
// packets, rollouts and reports are byte-identical before and after, the
// rejudgements and the rejudged reports are in rejudged/HEX, a second
// rejudge asks nothing and writes the same bytes, and a missing packet or
// a judge of another mode is an error naming it.
func TestRejudge(t *testing.T) {
	e := dockertest.Engine(t)
	dir := filepath.Join(t.TempDir(), "suite")
	p := judgeRunSuite(t, e, dir, `package t

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
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"="+p.Suite.Name) })
	out := t.TempDir()
	_, orig := evaluate(t, p, dir, out)
	if orig.Verdict.Verdict != verdict.VerdictPass {
		t.Fatalf("original verdict %s %v", orig.Verdict.Verdict, orig.Verdict.Reasons)
	}
	storeDirs := []string{store.DirJudgements, store.DirGrades, store.DirPackets, store.DirRollouts}
	before := checksums(t, out, storeDirs...)
	reports := []string{"plan.json", "verdict.json", "report.json", "report.md", "report.html", "junit.xml", "audit-queue.json"}
	reportBytes := map[string][]byte{}
	for _, f := range reports {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		reportBytes[f] = b
	}
	nPackets := 0
	for f := range before {
		if strings.HasPrefix(f, filepath.FromSlash(store.DirPackets)) {
			nPackets++
		}
	}
	if nPackets != len(p.Cells) {
		t.Fatalf("%d packets stored, want one per cell (%d)", nPackets, len(p.Cells))
	}

	// The rejudge needs no engine: a scripted judge is a local gateway.
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	strict := p.Judge.Judge
	strict.Script = &suite.Script{Model: "strict", Rules: []suite.ScriptRule{{Reply: []suite.ScriptBlock{{Text: ptr(`{"criteria": [{"criterion": 0, "pass": false, "evidence": "never enough"}]}`)}}}}}
	var log bytes.Buffer
	rep, rdir, err := judge.Rejudge(context.Background(), out, strict, judge.RejudgeOptions{SuiteDir: dir, Jobs: 4, Log: &log})
	t.Logf("rejudge:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
	q, err := judge.RejudgePlan(p, strict)
	if err != nil {
		t.Fatal(err)
	}
	if q.Judge.Digest == p.Judge.Digest || rdir != filepath.Join(out, judge.DirRejudged, q.Judge.Digest.Encoded()[:12]) {
		t.Errorf("rejudged into %s; judge %s, run judge %s", rdir, q.Judge.Digest, p.Judge.Digest)
	}
	if rep.Verdict.Verdict == orig.Verdict.Verdict || rep.Verdict.Verdict != verdict.VerdictFail {
		t.Errorf("rejudged verdict %s %v, original %s", rep.Verdict.Verdict, rep.Verdict.Reasons, orig.Verdict.Verdict)
	}
	if rep.Judge == nil || rep.Judge.Digest != q.Judge.Digest {
		t.Errorf("rejudged report's judge %+v, want %s", rep.Judge, q.Judge.Digest)
	}
	for _, c := range rep.Cases {
		for arm, trials := range c.Trials {
			for _, tr := range trials {
				if tr.Passed || len(tr.Failed) != 1 || tr.Failed[0] != "rubric 0: The answer is marked." {
					t.Errorf("%s (%s): passed %v, failed %v; want the criterion failed", tr.Cell, arm, tr.Passed, tr.Failed)
				}
			}
		}
	}
	// Nothing of the run changed: no rollout, no grade, no judgement.
	sameSums(t, "run store", before, checksums(t, out, storeDirs...))
	for _, f := range reports {
		if b, _ := os.ReadFile(filepath.Join(out, f)); !bytes.Equal(b, reportBytes[f]) {
			t.Errorf("the run's %s changed", f)
		}
	}
	// One rejudgement per packet, and, since the strict judge fails every
	// cell whose checks passed, one adjudication per cell, beside it.
	judgements, _ := filepath.Glob(filepath.Join(rdir, "judgements", "*.json"))
	if len(judgements) != 2*nPackets {
		t.Errorf("%d rejudgements and adjudications, want %d", len(judgements), 2*nPackets)
	}
	adjudications := map[string]bool{}
	for _, c := range p.Cells {
		adjudications[grade.AdjudicationKey(c.Grade).Encoded()+".json"] = true
	}
	for _, f := range judgements {
		jd, ok, err := store.ReadJudgementFile(f)
		if err != nil || !ok || jd.Judge != q.Judge.Digest || jd.Usage.Model != "strict" || len(jd.Criteria) != 1 || jd.Criteria[0].Pass {
			t.Errorf("%s: %+v %v", f, jd, err)
		}
		if adjudications[filepath.Base(f)] {
			if jd.Role != store.RoleAdjudicator {
				t.Errorf("adjudication %s: role %q", filepath.Base(f), jd.Role)
			}
			continue
		}
		if _, err := os.Stat(filepath.Join(out, store.DirPackets, filepath.Base(f))); err != nil {
			t.Errorf("rejudgement %s has no packet: %v", filepath.Base(f), err)
		}
	}
	if rep.Adjudication == nil || len(rep.Adjudication.Disputed) != len(p.Cells) || rep.Adjudication.Disputed[0].Decision != grade.DecisionFail {
		t.Errorf("rejudged adjudication %+v", rep.Adjudication)
	}
	rejudged := []string{"verdict.json", "report.json", "report.md", "report.html", "junit.xml", judge.FileRejudgeJudge}
	rejudgedBytes := map[string][]byte{}
	for _, f := range rejudged {
		b, err := os.ReadFile(filepath.Join(rdir, f))
		if err != nil || len(b) == 0 {
			t.Fatalf("rejudged %s: %v", f, err)
		}
		rejudgedBytes[f] = b
	}
	if !bytes.Contains(rejudgedBytes["verdict.json"], []byte(`"FAIL"`)) {
		t.Errorf("rejudged verdict.json:\n%s", rejudgedBytes["verdict.json"])
	}

	// Again: every rejudgement is reused, the same bytes are written.
	sums := checksums(t, rdir, "judgements")
	log.Reset()
	if _, _, err := judge.Rejudge(context.Background(), out, strict, judge.RejudgeOptions{SuiteDir: dir, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "0 to ask") {
		t.Errorf("second rejudge asked again:\n%s", log.String())
	}
	sameSums(t, "rejudgements", sums, checksums(t, rdir, "judgements"))
	for _, f := range rejudged {
		if b, _ := os.ReadFile(filepath.Join(rdir, f)); !bytes.Equal(b, rejudgedBytes[f]) {
			t.Errorf("rejudged %s differs on a second rejudge", f)
		}
	}

	// A judge of another mode has no packets to read.
	pw := strict
	pw.Mode, pw.Pairs = "pairwise", []suite.Pair{{Candidate: "forced", Baseline: "none"}}
	if _, _, err := judge.Rejudge(context.Background(), out, pw, judge.RejudgeOptions{}); err == nil || !strings.Contains(err.Error(), "rubric packets") {
		t.Errorf("pairwise judge on rubric packets: %v", err)
	}

	// A missing packet: an error naming it and its cell, no report.
	c := p.Cells[len(p.Cells)-1]
	missing := filepath.Join(out, store.DirPackets, c.Grade.Encoded()+".json")
	if err := os.Remove(missing); err != nil {
		t.Fatal(err)
	}
	other := strict
	other.Model = "another"
	_, _, err = judge.Rejudge(context.Background(), out, other, judge.RejudgeOptions{SuiteDir: dir})
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), c.ID) {
		t.Errorf("missing packet: %v; want it to name %s (%s)", err, missing, c.ID)
	}
	q2, _ := judge.RejudgePlan(p, other)
	if _, err := os.Stat(filepath.Join(judge.RejudgeDir(out, q2.Judge.Digest), "verdict.json")); err == nil {
		t.Error("a report was written despite a missing packet")
	}
}

func ptr(s string) *string { return &s }
