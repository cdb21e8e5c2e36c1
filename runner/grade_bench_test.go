package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/cell"

	"github.com/skillgate/skillgate/runner/images"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/internal/benchtest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// fixtureFilesSuite has a case over a 20,000-file fixture and one over an empty one
// (only notes.txt and the nonce); in both the agent changes one file, and the grade has
// a typed assertion and a run: one.
const fixtureFilesSuite = `package b

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "bench-fixture-files"
	skills: s: path: "skill"
	agent: agents.command & {command: ["sh", "-c", "echo changed >>notes.txt"]}
	trials: 5
	arms: none: {}
	_assert: [
		{file: "notes.txt", contains: "changed"},
		{run: "grep -q changed \"$WORLD/notes.txt\" && test -f \"$WORLD/.bench-nonce\""},
	]
	cases: {
		big: {prompt: "big", fixture: "fxbig", assert: _assert}
		empty: {prompt: "empty", fixture: "fxempty", assert: _assert}
	}
	policy: policies.advisory
}
`

// BenchmarkCollectGradeFixtureFiles measures a cell's collection and grading as its
// fixture's file count grows: a 20,000-file fixture (200 folders of 100 small files)
// against an empty one, the agent changing one file in both, the grade a typed check
// and a run: check. Each iteration runs both cases' 5 trials into fresh run folders,
// alternating which goes first, then grades every cell; the figures are per cell: the
// rollout's collect phase with the index of the initial workspace it compares with (made
// once for a cell image's trials), and the grading of its stored rollout (its checks, the run:
// one in a check container laid out from the cell image and the stored changes), the
// run's one-time work (pinning the fixture, connecting to the engine, finding the
// images) outside them.
func BenchmarkCollectGradeFixtureFiles(b *testing.B) {
	e, err := docker.NewEngine(context.Background())
	if err != nil {
		b.Skipf("no Docker engine: %v", err)
	}
	defer e.Close()
	b.Cleanup(func() {
		if _, err := e.RemoveImages(context.Background(), docker.LabelSuite+"=bench-fixture-files"); err != nil {
			b.Errorf("remove the benchmark's images: %v", err)
		}
	})
	ctx := context.Background()
	dir := b.TempDir()
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "skill"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "skill", "SKILL.md"), []byte("---\nname: s\ndescription: A skill of the fixture benchmark.\n---\n"), 0o644))
	nb := make([]byte, 8)
	rand.Read(nb)
	for _, fx := range []string{"fxbig", "fxempty"} {
		must(os.MkdirAll(filepath.Join(dir, fx), 0o755))
		must(os.WriteFile(filepath.Join(dir, fx, ".bench-nonce"), []byte(hex.EncodeToString(nb)+"\n"), 0o644))
		must(os.WriteFile(filepath.Join(dir, fx, "notes.txt"), []byte("notes\n"), 0o644))
	}
	for d := 0; d < 200; d++ {
		sub := filepath.Join(dir, "fxbig", fmt.Sprintf("d%03d", d))
		must(os.Mkdir(sub, 0o755))
		for f := 0; f < 100; f++ {
			must(os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d", f)), []byte(fmt.Sprintf("file %d of folder %d\n", f, d)), 0o644))
		}
	}
	must(os.WriteFile(filepath.Join(dir, "suite.cue"), []byte(fixtureFilesSuite), 0o644))
	p, err := plan.CompileDir(dir)
	if err != nil {
		b.Fatal(suite.PrintError(err, dir))
	}

	// side runs the case's cells into a fresh run folder and returns the mean seconds a
	// cell's collection and its grading took.
	side := func(id string) (collect, grading float64) {
		b.Helper()
		out := b.TempDir()
		opts := Options{Out: out, SuiteDir: dir, Jobs: 1, Cases: []string{id}}
		sum, err := Run(ctx, p, opts)
		must(err)
		if !sum.Complete() {
			b.Fatalf("case %s: %+v", id, sum)
		}
		st, err := store.OpenStore(out)
		must(err)
		var cells []plan.Cell
		for _, c := range p.Cells {
			if c.Case == id {
				cells = append(cells, c)
			}
		}
		g := &grader{plan: p, store: st, opts: opts, cases: p.CasesByID(), arms: p.ArmsByName(), out: out, runID: cell.NewRunID()}
		defer g.close()
		g.once.Do(func() {
			g.engine, g.err = newBackend(ctx, opts)
			if g.err == nil {
				g.images = images.New(g.engine, p, st, io.Discard)
			}
		})
		must(g.err)
		pc := g.cases[id]
		if _, _, err := g.images.CellImage(ctx, pc, plan.CaseArm(p, pc, p.Arms[0])); err != nil {
			b.Fatal(err)
		}
		// The collector's index of the initial workspace is made before the container
		// runs, outside the collect phase the rollout records: it is timed here as a
		// run makes it, once for the trials of the case's cell image.
		cr := &cell.Runner{Plan: p}
		var each []string
		for _, c := range cells {
			ro, ok, err := st.Rollout(c.Rollout)
			if err != nil || !ok {
				b.Fatalf("rollout of %s: %v %v", c.ID, ok, err)
			}
			if len(ro.Changes) != 1 {
				b.Fatalf("%s changed %+v, want notes.txt alone", c.ID, ro.Changes)
			}
			t0 := time.Now()
			if _, err := cr.Collector(pc, plan.CaseArm(p, pc, p.Arms[0]), b.TempDir(), nil); err != nil {
				b.Fatal(err)
			}
			collect += ro.Durations.Collect + time.Since(t0).Seconds()
			t0 = time.Now()
			must(g.grade(ctx, c))
			d := time.Since(t0).Seconds()
			grading += d
			each = append(each, fmt.Sprintf("%.0f", d*1e3))
			r, ok, err := st.Grade(c.Grade)
			if err != nil || !ok || len(r.Checks) != 2 {
				b.Fatalf("grade of %s: %+v %v %v", c.ID, r, ok, err)
			}
			for _, ch := range r.Checks {
				if !ch.Passed {
					b.Fatalf("%s: check %s failed: %s", c.ID, ch.Name, ch.Detail)
				}
			}
		}
		b.Logf("%s: grades of %v ms", id, each)
		g.sweep(ctx)
		os.RemoveAll(out)
		n := float64(len(cells))
		return collect / n, grading / n
	}

	side("big") // the cell images built, outside the figures
	side("empty")
	var big, empty, ratios, collectRatios, gradeRatios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var bc, bg, ec, eg float64
		if i%2 == 0 {
			bc, bg = side("big")
			ec, eg = side("empty")
		} else {
			ec, eg = side("empty")
			bc, bg = side("big")
		}
		big, empty = append(big, bc+bg), append(empty, ec+eg)
		ratios = append(ratios, (bc+bg)/(ec+eg))
		collectRatios, gradeRatios = append(collectRatios, bc/ec), append(gradeRatios, bg/eg)
		b.Logf("iteration %d: 20,000 files: collect %.1f ms, grade %.1f ms a cell; empty: collect %.1f ms, grade %.1f ms", i, bc*1e3, bg*1e3, ec*1e3, eg*1e3)
	}
	b.StopTimer()
	lo, mid, hi := benchtest.MinMedMax(ratios)
	b.ReportMetric(benchtest.Mean(big)*1e3, "20k-ms/cell")
	b.ReportMetric(benchtest.Mean(empty)*1e3, "empty-ms/cell")
	b.ReportMetric(benchtest.Mean(big)/benchtest.Mean(empty), "ratio")
	benchtest.ReportSpread(b, "ratio", ratios)
	b.ReportMetric(benchtest.Mean(collectRatios), "collect-ratio")
	b.ReportMetric(benchtest.Mean(gradeRatios), "grade-ratio")
	clo, cmid, chi := benchtest.MinMedMax(collectRatios)
	glo, gmid, ghi := benchtest.MinMedMax(gradeRatios)
	b.Logf("ratio min/median/max %.3f/%.3f/%.3f; collect %.3f/%.3f/%.3f; grade %.3f/%.3f/%.3f", lo, mid, hi, clo, cmid, chi, glo, gmid, ghi)
}
