package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/skillgate/skillgate/runner"
)

// BenchmarkShards runs the demo suite's 90-cell plan whole, and as three
// shards one after another (each as it would run alone on its own machine)
// merged into one folder, alternating which side goes first. It reports
// the slowest shard's wall time and the shards' sum against the whole run's,
// and the merge's: on three machines the plan takes about max-ratio of the
// whole run, and sharding costs sum-ratio of its machine time (each shard
// calibrates and grades its own cells). The merged verdict.json must be the
// whole run's, byte for byte. Cell images are prebuilt by a warm-up run; the
// demo's are left in place for the demo's tests.
func BenchmarkShards(b *testing.B) {
	if _, err := docker.NewEngine(context.Background()); err != nil {
		b.Skipf("no Docker engine: %v", err)
	}
	p, err := plan.CompileDir("../suites/demo")
	if err != nil {
		b.Fatal(suite.PrintError(err, ".."))
	}
	dir, _ := filepath.Abs("../suites/demo")
	const jobs, n = 4, 3
	evaluate := func(out string, s runner.Shard) time.Duration {
		t0 := time.Now()
		sum, _, err := runner.Evaluate(context.Background(), p, runner.Options{Out: out, SuiteDir: dir, Jobs: jobs, Shard: s})
		el := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if !sum.Complete() || sum.Ran != sum.Selected {
			b.Fatalf("run %s of %s: %+v; want every selected cell run and valid", s, out, sum)
		}
		return el
	}
	evaluate(b.TempDir(), runner.Shard{})

	var whole, slowest, total, merging time.Duration
	var maxRatios, sumRatios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		root := b.TempDir()
		var w, mx, sm time.Duration
		one := func() { w = evaluate(filepath.Join(root, "whole"), runner.Shard{}) }
		shards := func() {
			for s := 1; s <= n; s++ {
				el := evaluate(filepath.Join(root, fmt.Sprintf("s%d", s)), runner.Shard{Index: s, Count: n})
				mx, sm = max(mx, el), sm+el
			}
		}
		if i%2 == 0 {
			one()
			shards()
		} else {
			shards()
			one()
		}
		t0 := time.Now()
		merged := filepath.Join(root, "merged")
		var dirs []string
		for s := 1; s <= n; s++ {
			dirs = append(dirs, filepath.Join(root, fmt.Sprintf("s%d", s)))
		}
		if _, err := store.Merge(merged, dirs); err != nil {
			b.Fatal(err)
		}
		if _, err := runner.Report(merged); err != nil {
			b.Fatal(err)
		}
		mg := time.Since(t0)
		a, _ := os.ReadFile(filepath.Join(root, "whole", "verdict.json"))
		m, _ := os.ReadFile(filepath.Join(merged, "verdict.json"))
		if len(a) == 0 || !bytes.Equal(a, m) {
			b.Fatalf("merged verdict.json differs from the whole run's:\n%s\n---\n%s", m, a)
		}
		whole, slowest, total, merging = whole+w, slowest+mx, total+sm, merging+mg
		maxRatios, sumRatios = append(maxRatios, float64(mx)/float64(w)), append(sumRatios, float64(sm)/float64(w))
	}
	b.StopTimer()
	runs := float64(b.N)
	b.ReportMetric(whole.Seconds()/runs, "whole-s")
	b.ReportMetric(slowest.Seconds()/runs, "slowest-shard-s")
	b.ReportMetric(merging.Seconds()/runs, "merge-s")
	b.ReportMetric(float64(slowest)/float64(whole), "max-ratio")
	b.ReportMetric(float64(total)/float64(whole), "sum-ratio")
	b.ReportMetric(float64(merging)/float64(whole), "merge-ratio")
	spread := func(rs []float64) string {
		s := slices.Clone(rs)
		slices.Sort(s)
		return fmt.Sprintf("min %.3f, median %.3f, max %.3f", s[0], s[len(s)/2], s[len(s)-1])
	}
	b.Logf("%d cells, %d shards, jobs %d: slowest shard / whole %s; shards' sum / whole %s", len(p.Cells), n, jobs, spread(maxRatios), spread(sumRatios))
}
