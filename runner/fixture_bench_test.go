package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/images"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/internal/benchtest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// fixtureArmsSuite has one case over a 20 MB fixture and three arms, each installing
// its own skill.
const fixtureArmsSuite = `package b

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "bench-fixture-arms"
	skills: {
		s1: path: "skills/s1"
		s2: path: "skills/s2"
		s3: path: "skills/s3"
	}
	agent: agents.command & {command: ["true"]}
	trials: 1
	arms: {
		one: {skills: ["s1"], activation: "forced"}
		two: {skills: ["s2"], activation: "forced"}
		three: {skills: ["s3"], activation: "forced"}
	}
	cases: a: {prompt: "a", fixture: "fx"}
	policy: policies.advisory
}
`

// BenchmarkFixtureImageArms measures what a case's images cost as its arms grow: the
// cell images of three arms over a 20 MB fixture (20 files of 1 MB of random bytes)
// against those of one arm, each iteration both, alternating which goes first, each
// side over a fixture of its own (a fresh nonce), so every image is built. Time is what
// a run's first cells do before their containers, from the store's pinned snapshots,
// the run's arms expected (as prepareImages says them): the images' build and each
// arm's skills verified (cellOf); the three asked for at once, as with the default
// --jobs 4 (ratio), and one after another, as with --jobs 1 (serial-ratio);
// disk is the bytes of the layers they add above the agent image, read from the
// engine's image sizes (each image is one layer above the one below it).
func BenchmarkFixtureImageArms(b *testing.B) {
	e, err := docker.NewEngine(context.Background())
	if err != nil {
		b.Skipf("no Docker engine: %v", err)
	}
	defer e.Close()
	ctx := context.Background()
	b.Cleanup(func() {
		if _, err := e.RemoveImages(context.Background(), docker.LabelSuite+"=bench-fixture-arms"); err != nil {
			b.Errorf("remove the benchmark's images: %v", err)
		}
	})
	dir := b.TempDir()
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	for _, s := range []string{"s1", "s2", "s3"} {
		must(os.MkdirAll(filepath.Join(dir, "skills", s), 0o755))
		must(os.WriteFile(filepath.Join(dir, "skills", s, "SKILL.md"), []byte("---\nname: "+s+"\ndescription: A skill of the fixture benchmark.\n---\nDo the task well.\n"), 0o644))
	}
	must(os.MkdirAll(filepath.Join(dir, "fx"), 0o755))
	for i := 0; i < 20; i++ {
		data := make([]byte, 1<<20)
		rand.Read(data)
		must(os.WriteFile(filepath.Join(dir, "fx", fmt.Sprintf("blob%02d.bin", i)), data, 0o644))
	}
	must(os.WriteFile(filepath.Join(dir, "suite.cue"), []byte(fixtureArmsSuite), 0o644))

	// side builds the cell images of the first n arms over a fresh fixture, at once as
	// the cells of a run with --jobs ≥ n ask for them, or one after another as with
	// --jobs 1, and returns the build's seconds and the bytes its layers add above the
	// agent image.
	side := func(n int, parallel bool) (float64, int64, float64) {
		b.Helper()
		nb := make([]byte, 8)
		rand.Read(nb)
		must(os.WriteFile(filepath.Join(dir, "fx", ".bench-nonce"), []byte(hex.EncodeToString(nb)+"\n"), 0o644))
		p, err := plan.CompileDir(dir)
		if err != nil {
			b.Fatal(suite.PrintError(err, dir))
		}
		st, err := store.OpenStore(b.TempDir())
		must(err)
		pc, arms := p.Cases[0], p.Arms[:n]
		in := newInputs(p, dir, st)
		for _, arm := range arms {
			must(in.add(pc, arm))
		}
		must(in.pin())
		im := images.New(dockerBackend{e}, p, st, io.Discard)
		for _, arm := range arms { // as a run's prepareImages
			im.Expect(pc, arm)
		}
		agentRef, _, _, err := im.AgentImage(ctx)
		must(err)

		t0, cpu0 := time.Now(), engineCPU()
		cells := make([]string, len(arms))
		errs := make([]error, len(arms))
		if parallel {
			var wg sync.WaitGroup
			for i, arm := range arms {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = cellOf(im, pc, arm, &cells[i])
				}()
			}
			wg.Wait()
		} else {
			for i, arm := range arms {
				errs[i] = cellOf(im, pc, arm, &cells[i])
			}
		}
		secs, cpu := time.Since(t0).Seconds(), engineCPU()-cpu0
		for _, err := range errs {
			must(err)
		}

		sizes := map[string]int64{}
		var tops []string
		for _, ref := range append([]string{agentRef, onlyFixture(b, im)}, cells...) {
			info, ok, err := e.ImageInfo(ctx, ref)
			if err != nil || !ok {
				b.Fatalf("inspect %s: %v %v", ref, ok, err)
			}
			key := fmt.Sprint(info.Layers)
			sizes[key] = info.Size
			tops = append(tops, key, fmt.Sprint(info.Layers[:len(info.Layers)-1]))
		}
		// Each image past the agent's adds its top layer: the difference of its size
		// and its parent's, counted once per distinct layer chain.
		var disk int64
		seen := map[string]bool{}
		for i := 2; i < len(tops); i += 2 {
			key, parent := tops[i], tops[i+1]
			if seen[key] {
				continue
			}
			seen[key] = true
			ps, ok := sizes[parent]
			if !ok {
				b.Fatalf("an image is not one layer above another of the case: %s", key)
			}
			disk += sizes[key] - ps
		}
		for _, ref := range append([]string{onlyFixture(b, im)}, cells...) {
			_, labels, _, err := e.ImageLabels(ctx, ref)
			must(err)
			if _, err := e.RemoveImages(ctx, docker.LabelCellKey+"="+labels[docker.LabelCellKey]); err != nil {
				b.Fatal(err)
			}
		}
		return secs, disk, cpu
	}

	side(1, false) // the agent image and the engine warm, outside the figures
	var one, three, serial, ratios, serialRatios, cpuRatios []float64
	var oneDisk, threeDisk int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var s1, s3, ss, c1, c3 float64
		var d1, d3 int64
		// The three sides in a rotating order.
		for k := 0; k < 3; k++ {
			switch (i + k) % 3 {
			case 0:
				s1, d1, c1 = side(1, false)
			case 1:
				s3, d3, c3 = side(3, true)
			case 2:
				ss, _, _ = side(3, false)
			}
		}
		one, three, serial = append(one, s1), append(three, s3), append(serial, ss)
		ratios, serialRatios = append(ratios, s3/s1), append(serialRatios, ss/s1)
		if c1 > 0 {
			cpuRatios = append(cpuRatios, c3/c1)
		}
		oneDisk, threeDisk = d1, d3
		b.Logf("iteration %d: one arm %.3fs %d bytes; three arms %.3fs at once, %.3fs one after another, %d bytes; the engine's CPU %.2fs and %.2fs", i, s1, d1, s3, ss, d3, c1, c3)
	}
	b.StopTimer()
	b.ReportMetric(benchtest.Mean(one), "one-arm-s")
	b.ReportMetric(benchtest.Mean(three), "three-arms-s")
	b.ReportMetric(benchtest.Mean(three)/benchtest.Mean(one), "ratio")
	benchtest.ReportSpread(b, "ratio", ratios)
	b.ReportMetric(benchtest.Mean(serial), "three-arms-serial-s")
	b.ReportMetric(benchtest.Mean(serial)/benchtest.Mean(one), "serial-ratio")
	b.Logf("ratio min/median/max %s; serial-ratio %s", benchtest.Spread(ratios), benchtest.Spread(serialRatios))
	b.ReportMetric(float64(oneDisk)/1e6, "one-arm-MB")
	b.ReportMetric(float64(threeDisk)/1e6, "three-arms-MB")
	b.ReportMetric(float64(threeDisk)/float64(oneDisk), "disk-ratio")
	if len(cpuRatios) > 0 {
		benchtest.ReportSpread(b, "engine-cpu-ratio", cpuRatios)
		b.Logf("engine-cpu-ratio min/median/max %s", benchtest.Spread(cpuRatios))
	}
}

// engineCPU is the CPU seconds the local Docker engine has spent, its own and those of
// the processes it ran and waited for (each layer it unpacks is one), or 0 when the
// engine is not a local process this one can read: a figure of the engine's work that
// a loaded machine's waits do not inflate, though another client's work does.
func engineCPU() float64 {
	if os.Getenv("DOCKER_HOST") != "" {
		return 0
	}
	pid, err := os.ReadFile("/var/run/docker.pid")
	if err != nil {
		return 0
	}
	stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat")
	if err != nil {
		return 0
	}
	// After the command's closing parenthesis: utime, stime, cutime and cstime are the
	// 12th to 15th fields, in clock ticks (100 a second on Linux).
	_, rest, ok := strings.Cut(string(stat), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 15 {
		return 0
	}
	var ticks float64
	for _, x := range f[11:15] {
		n, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0
		}
		ticks += n
	}
	return ticks / 100
}

// cellOf is what the first cell of arm does before its container starts: it finds or
// builds its cell image (into ref) and has its skills verified from the store's
// snapshots, one read-only tree each.
func cellOf(im *images.Images, pc plan.PlanCase, arm plan.PlanArm, ref *string) error {
	r, _, err := im.CellImage(context.Background(), pc, arm)
	if err != nil {
		return err
	}
	*ref = r
	trees, err := im.SkillTrees(arm)
	if err == nil && len(trees) != len(arm.Skills) {
		err = fmt.Errorf("arm %s: %d skill trees for %d skills", arm.Name, len(trees), len(arm.Skills))
	}
	return err
}
