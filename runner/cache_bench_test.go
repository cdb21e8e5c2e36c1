package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/cache"
	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/internal/benchtest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// freshFolderSuite has ten cells over its fixture fx.
const freshFolderSuite = `package b

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "bench-fresh-folder"
	agent: agents.command & {command: ["true"]}
	trials: 10
	arms: none: {}
	cases: c: {prompt: "c", fixture: "fx"}
	policy: policies.advisory
}
`

// freshRun is what one invocation took, in seconds from its start (the
// plan's compile): until its first cell was admitted (its container about
// to be made), and until Run returned; compile is the plan's compile alone.
type freshRun struct{ compile, start, whole float64 }

// BenchmarkFreshFolderPinnedFixture measures what a fresh run folder pays for a large
// fixture already pinned in the machine's cache. Each side is one invocation as
// `skillgate run` makes it: the plan compiled from the suite folder (its live folders
// hashed, through the cache's stat index when there is a cache), then Run into a fresh
// folder (the trees pinned, ten cells of agent true with the default four jobs, the live
// folders hashed again after the rollouts, by their watch since the compile when
// there is a cache; each invocation starts with no folder watched, as a new process). Two suite folders, alike but for their
// fixture: a 20,000-file one (200 folders of 100 files of 4 KB of random bytes, 82 MB)
// and a one-file one. start is from the compile until the first cell is admitted;
// whole until Run returns. start-ratio and ratio are the 20,000-file invocation against
// the one-file one, both with the cache; start-copy-ratio and copy-ratio the 20,000-file
// invocation without a cache (compiled by HashTree, its fixture copied) against the
// same one-file one; cells-ratio is whole minus start (the cells and the check after
// them). pin-ratio is the pinning alone (a fresh store's PinTree of the fixture), cached
// against copied. The cell images and the cache (snapshots, stat records, indexes) are
// made by warm-up runs; the three sides take turns going first.
func BenchmarkFreshFolderPinnedFixture(b *testing.B) {
	e, err := docker.NewEngine(context.Background())
	if err != nil {
		b.Skipf("no Docker engine: %v", err)
	}
	defer e.Close()
	b.Cleanup(func() {
		if _, err := e.RemoveImages(context.Background(), docker.LabelSuite+"=bench-fresh-folder"); err != nil {
			b.Errorf("remove the benchmark's images: %v", err)
		}
	})
	b.Cleanup(func() { plan.SetLiveHasher(nil) })
	ctx := context.Background()
	root, cacheDir := b.TempDir(), b.TempDir()
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	nb := make([]byte, 8)
	rand.Read(nb)
	big, small := filepath.Join(root, "big"), filepath.Join(root, "small")
	for _, dir := range []string{big, small} {
		must(os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
		must(os.MkdirAll(filepath.Join(dir, "fx"), 0o755))
		must(os.WriteFile(filepath.Join(dir, "fx", ".bench-nonce"), []byte(hex.EncodeToString(nb)+"\n"), 0o644))
		must(os.WriteFile(filepath.Join(dir, "suite.cue"), []byte(freshFolderSuite), 0o644))
	}
	data := make([]byte, 4096)
	for d := 0; d < 200; d++ {
		sub := filepath.Join(big, "fx", fmt.Sprintf("d%03d", d))
		must(os.Mkdir(sub, 0o755))
		for f := 0; f < 100; f++ {
			rand.Read(data)
			must(os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d", f)), data, 0o644))
		}
	}
	time.Sleep(cache.RacyMargin) // as a fixture checked out a while before the run

	invoke := func(dir, cacheTo string) freshRun {
		b.Helper()
		var once sync.Once
		var first time.Time
		cache.Unwatch() // as a new process: no folder watched yet
		t0 := time.Now()
		plan.SetLiveHasher(nil)
		if cacheTo != "" {
			plan.SetLiveHasher(cache.LiveHasher(cacheTo))
		}
		p, err := plan.CompileDir(dir)
		if err != nil {
			b.Fatal(suite.PrintError(err, dir))
		}
		compiled := time.Since(t0).Seconds()
		sum, err := Run(ctx, p, Options{Out: b.TempDir(), SuiteDir: dir, Jobs: 4, Cache: cacheTo,
			onCellStart: func(string) { once.Do(func() { first = time.Now() }) }})
		whole := time.Since(t0).Seconds()
		must(err)
		if !sum.Complete() || sum.Ran != 10 {
			b.Fatalf("%s: %+v", dir, sum)
		}
		return freshRun{compiled, first.Sub(t0).Seconds(), whole}
	}
	pBig, err := plan.CompileDir(big)
	must(err)
	pin := func(cacheTo string) float64 {
		b.Helper()
		st, err := store.OpenStore(b.TempDir())
		must(err)
		must(useCache(st, Options{Cache: cacheTo}))
		t0 := time.Now()
		_, err = st.PinTree("fixture fx", filepath.Join(big, "fx"), pBig.Fixtures["fx"])
		must(err)
		return time.Since(t0).Seconds()
	}
	// The images built, the cache made, then its stat records and indexes
	// written by runs that found them.
	for i := 0; i < 2; i++ {
		invoke(big, cacheDir)
		invoke(small, cacheDir)
	}

	var ratios, copyRatios, startRatios, startCopyRatios, cellsRatios, pinRatios []float64
	var starts [3][]float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var sb, ss, sc freshRun
		for k := 0; k < 3; k++ {
			switch (i + k) % 3 {
			case 0:
				sb = invoke(big, cacheDir)
			case 1:
				ss = invoke(small, cacheDir)
			case 2:
				sc = invoke(big, "")
			}
		}
		pc, pp := pin(cacheDir), pin("")
		ratios, copyRatios = append(ratios, sb.whole/ss.whole), append(copyRatios, sc.whole/ss.whole)
		startRatios, startCopyRatios = append(startRatios, sb.start/ss.start), append(startCopyRatios, sc.start/ss.start)
		cellsRatios = append(cellsRatios, (sb.whole-sb.start)/(ss.whole-ss.start))
		pinRatios = append(pinRatios, pc/pp)
		for j, r := range []freshRun{sb, ss, sc} {
			starts[j] = append(starts[j], r.start)
		}
		b.Logf("iteration %d: compile/start/whole 20,000 files cached %.3fs/%.3fs/%.3fs, one file %.3fs/%.3fs/%.3fs, 20,000 files copied %.3fs/%.3fs/%.3fs; pinning cached %.3fs, copied %.3fs",
			i, sb.compile, sb.start, sb.whole, ss.compile, ss.start, ss.whole, sc.compile, sc.start, sc.whole, pc, pp)
	}
	b.StopTimer()
	b.ReportMetric(benchtest.Mean(starts[0]), "20k-cached-start-s")
	b.ReportMetric(benchtest.Mean(starts[1]), "one-file-start-s")
	b.ReportMetric(benchtest.Mean(starts[2]), "20k-copied-start-s")
	benchtest.ReportSpread(b, "start-ratio", startRatios)
	benchtest.ReportSpread(b, "ratio", ratios)
	b.ReportMetric(benchtest.Mean(copyRatios), "copy-ratio")
	b.ReportMetric(benchtest.Mean(pinRatios), "pin-ratio")
	b.Logf("start-ratio min/median/max %s; ratio %s; cells-ratio %s; start-copy-ratio %s; copy-ratio %s; pin-ratio (pinning cached / copied) %s",
		benchtest.Spread(startRatios), benchtest.Spread(ratios), benchtest.Spread(cellsRatios), benchtest.Spread(startCopyRatios), benchtest.Spread(copyRatios), benchtest.Spread(pinRatios))
}
