package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/internal/benchtest"
	"github.com/skillgate/skillgate/runner/reuse"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

const reuseCacheSuite = `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "bench-reuse-cache"
	skills: s: path: "skill"
	agent: agents.command & {command: ["sh", "-c", "echo hi"]}
	trials: 3
	arms: {
		none: {}
		forced: {skills: ["s"], activation: "forced"}
	}
	cases: {
		a: {prompt: "pa"}
		b: {prompt: "pb"}
	}
	policy: policies.advisory
}
`

// BenchmarkReuseFromCache times a fresh run folder taking all 12 cells of
// a suite (the command agent, echo) from the machine's cache (--reuse
// cache), against taking them from the run folder that made them (--reuse
// FOLDER), and against running them (12 containers; an agent that answers
// at once, so what reuse saves here is the containers alone, the least it
// saves). The images are built and the cache filled by a warm-up run with
// KeepRollouts; the three sides take turns going first.
func BenchmarkReuseFromCache(b *testing.B) {
	e, err := docker.NewEngine(context.Background())
	if err != nil {
		b.Skipf("no Docker engine: %v", err)
	}
	defer e.Close()
	b.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"=bench-reuse-cache") })
	dir, cacheDir := b.TempDir(), b.TempDir()
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "skill"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "skill", "SKILL.md"), []byte("---\nname: s\ndescription: A bench skill.\n---\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "suite.cue"), []byte(reuseCacheSuite), 0o644))
	p, err := plan.CompileDir(dir)
	if err != nil {
		b.Fatal(suite.PrintError(err, dir))
	}
	first := filepath.Join(b.TempDir(), "first")
	run := func(out, from string, keep bool) (float64, *Summary) {
		b.Helper()
		t0 := time.Now()
		sum, err := Run(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 4, Cache: cacheDir, Reuse: from, KeepRollouts: keep})
		must(err)
		return time.Since(t0).Seconds(), sum
	}
	if _, sum := run(first, "", true); sum.Ran != 12 {
		b.Fatalf("warm-up: %+v", sum)
	}
	var fromCache, fromFolder, ran, folderRatios, runRatios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var sc, sf, sr float64
		for k := 0; k < 3; k++ {
			out := b.TempDir()
			switch (i + k) % 3 {
			case 0:
				var sum *Summary
				if sc, sum = run(out, reuse.FromCache, false); sum.Taken != 12 {
					b.Fatalf("--reuse cache: %+v", sum)
				}
			case 1:
				var sum *Summary
				if sf, sum = run(out, first, false); sum.Taken != 12 {
					b.Fatalf("--reuse folder: %+v", sum)
				}
			case 2:
				var sum *Summary
				if sr, sum = run(out, "", false); sum.Ran != 12 {
					b.Fatalf("no reuse: %+v", sum)
				}
			}
		}
		fromCache, fromFolder, ran = append(fromCache, sc), append(fromFolder, sf), append(ran, sr)
		folderRatios, runRatios = append(folderRatios, sc/sf), append(runRatios, sc/sr)
		b.Logf("iteration %d: from the cache %.3fs, from the folder %.3fs, run %.3fs", i, sc, sf, sr)
	}
	b.ReportMetric(benchtest.Mean(fromCache), "cache-s")
	b.ReportMetric(benchtest.Mean(fromFolder), "folder-s")
	b.ReportMetric(benchtest.Mean(ran), "run-s")
	benchtest.ReportSpread(b, "cache/folder", folderRatios)
	benchtest.ReportSpread(b, "cache/run", runRatios)
	b.Logf("cache/folder min/median/max %s; cache/run %s", benchtest.Spread(folderRatios), benchtest.Spread(runRatios))
}
