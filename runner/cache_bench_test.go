package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/internal/benchtest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// freshFolderSuite has ten cells over a 20,000-file fixture and ten over a one-file one.
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
	cases: {
		big: {prompt: "big", fixture: "fxbig"}
		small: {prompt: "small", fixture: "fxsmall"}
	}
	policy: policies.advisory
}
`

// BenchmarkFreshFolderPinnedFixture measures what a fresh run folder pays for a large
// fixture already pinned in the machine's cache: the whole run (pinning, ten cells of
// agent true with the default four jobs, the live folders hashed again after the
// rollouts) of a case over a 20,000-file fixture (200 folders of 100 files of 4 KB of
// random bytes, 82 MB) into a fresh folder, its trees linked from the cache and every
// file verified, against the same run of a case over a one-file fixture (ratio), and
// against the 20,000-file case into a fresh folder without a cache, copying the fixture
// (copy-ratio). The cell images and the cache are made by warm-up runs; the three sides
// take turns going first. start-ratio is the pinning alone (a fresh store's PinTree of
// the fixture), cached against copied.
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
	ctx := context.Background()
	dir, cacheDir := b.TempDir(), b.TempDir()
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	nb := make([]byte, 8)
	rand.Read(nb)
	for _, fx := range []string{"fxbig", "fxsmall"} {
		must(os.MkdirAll(filepath.Join(dir, fx), 0o755))
		must(os.WriteFile(filepath.Join(dir, fx, ".bench-nonce"), []byte(hex.EncodeToString(nb)+"\n"), 0o644))
	}
	data := make([]byte, 4096)
	for d := 0; d < 200; d++ {
		sub := filepath.Join(dir, "fxbig", fmt.Sprintf("d%03d", d))
		must(os.Mkdir(sub, 0o755))
		for f := 0; f < 100; f++ {
			rand.Read(data)
			must(os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d", f)), data, 0o644))
		}
	}
	must(os.WriteFile(filepath.Join(dir, "suite.cue"), []byte(freshFolderSuite), 0o644))
	p, err := plan.CompileDir(dir)
	if err != nil {
		b.Fatal(suite.PrintError(err, dir))
	}

	run := func(id, cache string) float64 {
		b.Helper()
		t0 := time.Now()
		sum, err := Run(ctx, p, Options{Out: b.TempDir(), SuiteDir: dir, Jobs: 4, Cases: []string{id}, Cache: cache})
		must(err)
		if !sum.Complete() || sum.Ran != 10 {
			b.Fatalf("case %s: %+v", id, sum)
		}
		return time.Since(t0).Seconds()
	}
	pin := func(cache string) float64 {
		b.Helper()
		st, err := store.OpenStore(b.TempDir())
		must(err)
		must(useCache(st, Options{Cache: cache}))
		t0 := time.Now()
		_, err = st.PinTree("fixture fxbig", filepath.Join(dir, "fxbig"), p.Fixtures["fxbig"])
		must(err)
		return time.Since(t0).Seconds()
	}
	run("big", cacheDir) // the images built, the cache made
	run("small", cacheDir)

	var big, small, copied, ratios, copyRatios, startRatios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var sb, ss, sc float64
		for k := 0; k < 3; k++ {
			switch (i + k) % 3 {
			case 0:
				sb = run("big", cacheDir)
			case 1:
				ss = run("small", cacheDir)
			case 2:
				sc = run("big", "")
			}
		}
		pc, pp := pin(cacheDir), pin("")
		big, small, copied = append(big, sb), append(small, ss), append(copied, sc)
		ratios, copyRatios, startRatios = append(ratios, sb/ss), append(copyRatios, sc/ss), append(startRatios, pc/pp)
		b.Logf("iteration %d: 20,000 files cached %.3fs, one file %.3fs, 20,000 files copied %.3fs; pinning cached %.3fs, copied %.3fs", i, sb, ss, sc, pc, pp)
	}
	b.StopTimer()
	b.ReportMetric(benchtest.Mean(big), "20k-cached-s")
	b.ReportMetric(benchtest.Mean(small), "one-file-s")
	b.ReportMetric(benchtest.Mean(copied), "20k-copied-s")
	b.ReportMetric(benchtest.Mean(big)/benchtest.Mean(small), "ratio")
	benchtest.ReportSpread(b, "ratio", ratios)
	b.ReportMetric(benchtest.Mean(copied)/benchtest.Mean(small), "copy-ratio")
	b.ReportMetric(benchtest.Mean(startRatios), "start-ratio")
	b.Logf("ratio min/median/max %s; copy-ratio %s; start-ratio (pinning cached / copied) %s", benchtest.Spread(ratios), benchtest.Spread(copyRatios), benchtest.Spread(startRatios))
}
