package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/internal/benchtest"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// BenchmarkReuseSkillRevision measures what run --reuse saves on a skill's second
// revision: the demo suite (the real Claude Code CLI, its scripted model) is run once
// (the first revision, outside the figures), its skill's SKILL.md is edited (the edited
// revision's cell images built by a warm-up run, outside the figures), and each
// iteration evaluates the edited suite into a fresh run folder with --reuse from the
// first run against without, alternating which goes first. Reported: the cells each
// side ran (and the drift sentinels the --reuse side ran again, policy.reuse) and its
// wall time (ratio: with / without).
func BenchmarkReuseSkillRevision(b *testing.B) {
	if _, err := os.Stat("/var/run/docker.sock"); err != nil && os.Getenv("DOCKER_HOST") == "" {
		b.Skip("no Docker engine")
	}
	root := b.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		b.Fatal(err)
	}
	copyBenchTree(b, "../suites/demo", filepath.Join(root, "suites", "demo"))
	copyBenchTree(b, "../skills/changelog", filepath.Join(root, "skills", "changelog"))
	dir := filepath.Join(root, "suites", "demo")
	compile := func() *plan.Plan {
		p, err := plan.CompileDir(dir)
		if err != nil {
			b.Fatal(suite.PrintError(err, root))
		}
		return p
	}
	ctx := context.Background()
	sentinels := 0
	evaluate := func(p *plan.Plan, out, from string) (int, float64) {
		t0 := time.Now()
		sum, _, err := Evaluate(ctx, p, Options{Out: out, SuiteDir: dir, Jobs: 4, Reuse: from})
		if err != nil {
			b.Fatal(err)
		}
		if !sum.Complete() {
			b.Fatalf("run into %s: %+v", out, sum)
		}
		sentinels = sum.Sentinels
		return sum.Ran, time.Since(t0).Seconds()
	}
	first := filepath.Join(b.TempDir(), "first")
	evaluate(compile(), first, "")
	skill := filepath.Join(root, "skills", "changelog", "SKILL.md")
	text, err := os.ReadFile(skill)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(skill, append(text, []byte("\nKeep each entry to one line.\n")...), 0o644); err != nil {
		b.Fatal(err)
	}
	p2 := compile()
	// The edited skill's cell images, built once outside the figures, so the side that
	// goes first does not pay for them.
	evaluate(p2, filepath.Join(b.TempDir(), "warm"), first)

	var with, without, ratios []float64
	var ranWith, ranWithout, sentinelsWith int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var sw, so float64
		reused := func() {
			ranWith, sw = evaluate(p2, filepath.Join(b.TempDir(), "reuse"), first)
			sentinelsWith = sentinels
		}
		fresh := func() { ranWithout, so = evaluate(p2, filepath.Join(b.TempDir(), "fresh"), "") }
		if i%2 == 0 {
			reused()
			fresh()
		} else {
			fresh()
			reused()
		}
		with, without, ratios = append(with, sw), append(without, so), append(ratios, sw/so)
		b.Logf("iteration %d: with --reuse %d cells and %d drift sentinels run in %.1fs; without %d cells in %.1fs", i, ranWith, sentinelsWith, sw, ranWithout, so)
	}
	b.StopTimer()
	b.ReportMetric(float64(ranWith), "cells-run-reuse")
	b.ReportMetric(float64(ranWithout), "cells-run-fresh")
	b.ReportMetric(float64(sentinelsWith), "sentinels-reuse")
	b.ReportMetric(benchtest.Mean(with), "reuse-s")
	b.ReportMetric(benchtest.Mean(without), "fresh-s")
	benchtest.ReportSpread(b, "ratio", ratios)
	b.Logf("ratio (wall time with / without --reuse) min/median/max %s", benchtest.Spread(ratios))
}

// copyBenchTree copies the folder src to dst, files as 0644.
func copyBenchTree(b *testing.B, src, dst string) {
	b.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
}
