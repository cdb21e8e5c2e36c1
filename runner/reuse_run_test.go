package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/reuse"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestReuseAcrossSkillEdit runs a suite of a skill arm and a no-skill arm,
// edits the skill, and runs the new plan into a fresh folder with --reuse
// from the first: only the skill's arm runs, the no-skill cells are taken
// (verified, listed in reused.json, the same records), from the folder
// and from a pack of it; a taken record damaged in its source is refused.
// Both folders pin the fixture from one machine cache.
func TestReuseAcrossSkillEdit(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "pinned")
	cacheDir := t.TempDir()
	first := filepath.Join(t.TempDir(), "first")
	if sum := s.run(t, first, Options{Cache: cacheDir}); sum.Ran != 6 {
		t.Fatalf("first run: %+v", sum)
	}

	skill := filepath.Join(s.Dir, "skill", "SKILL.md")
	b, err := os.ReadFile(skill)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(skill, append(b, []byte("\nOne more line.\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	p2, err := plan.CompileDir(s.Dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, s.Dir))
	}
	s2 := runSuite{Dir: s.Dir, Plan: p2}

	if err := writePlan(first, s.Plan); err != nil {
		t.Fatal(err)
	}
	var pack bytes.Buffer
	if _, err := store.Export(first, &pack); err != nil {
		t.Fatal(err)
	}
	packFile := filepath.Join(t.TempDir(), "first.tar.gz")
	if err := os.WriteFile(packFile, pack.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	before := stored(t, first)
	for _, from := range []string{first, packFile} {
		out := filepath.Join(t.TempDir(), "second")
		dry := s2.run(t, out, Options{Cache: cacheDir, Reuse: from, DryRun: true})
		if dry.Taken != 3 || dry.Ran != 0 {
			t.Errorf("dry run with --reuse %s: %+v, want 3 cells it would reuse", from, dry)
		}
		sum := s2.run(t, out, Options{Cache: cacheDir, Reuse: from})
		if sum.Taken != 3 || sum.Ran != 3 || sum.Reused != 3 {
			t.Fatalf("--reuse %s: %+v, want the 3 no-skill cells taken and the 3 skill cells run", from, sum)
		}
		ledger, err := reuse.Ledger(out)
		if err != nil {
			t.Fatal(err)
		}
		for id, ro := range stored(t, out) {
			taken, ok := ledger[ro.Key]
			if ro.Arm == "none" {
				if !ok || taken.From != from || !taken.RanAt.Equal(before[id].StartedAt) || ro.Answer != before[id].Answer {
					t.Errorf("%s: ledger %+v, answer %q; want the first run's record taken from %s", id, taken, ro.Answer, from)
				}
			} else if ok {
				t.Errorf("%s of the edited skill's arm is in the ledger: %+v", id, taken)
			}
		}
		if _, _, err := Evaluate(context.Background(), s2.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4, Cache: cacheDir}); err != nil {
			t.Fatal(err)
		}
		page, err := os.ReadFile(filepath.Join(out, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(page), `"reused":{"from":`); n != 3 {
			t.Errorf("report.html marks %d cells reused, want 3", n)
		}
	}

	// A taken record is verified: an answer edited in the source is refused.
	var none plan.Cell
	for _, c := range s2.Plan.Cells {
		if c.Arm == "none" {
			none = c
			break
		}
	}
	answer := filepath.Join(first, filepath.FromSlash(store.DirRollouts), none.Rollout.Encoded(), store.FileAnswer)
	if err := os.WriteFile(answer, []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "third")
	var log bytes.Buffer
	sum, err := Run(context.Background(), s2.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4, Cache: cacheDir, Reuse: first, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Taken != 2 || sum.Ran != 4 || !strings.Contains(log.String(), "reuse: not taken, failed verification") {
		t.Errorf("with a damaged source record: %+v\n%s", sum, log.String())
	}
}
