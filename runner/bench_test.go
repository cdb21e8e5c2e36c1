package runner_test

// Benchmarks of the runner against baselines measured in the same run. Each
// reports ratios (never absolute timed assertions) and is usable with
// -benchtime 1x; they need a Docker engine and skip without one. See
// bench/README.md for the targets.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/internal/benchtest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/skillgate/skillgate/runner"
)

// benchSuite describes a generated suite.
type benchSuite struct {
	name    string
	trials  int
	command []string
	// fixture fills the fixture folder; a nonce file is always added so the
	// cell image is the benchmark's own (cell image tags do not depend on the
	// suite's name, only on the agent, fixture and skills).
	fixture func(tb testing.TB, dir string)
	// cases is how many cases the suite has (default 1), all alike, so a plan
	// can hold more cells than the schema's trials allow.
	cases int
	// provider is the agent's (default none: no gateway).
	provider string
	// forced runs the suite's one arm with its skill, forced (default: the arm
	// without skills).
	forced bool
}

// writeSuite writes s into a fresh repository folder and returns the suite
// folder and its compiled plan.
func writeSuite(tb testing.TB, s benchSuite) (string, *plan.Plan) {
	tb.Helper()
	dir := tb.TempDir()
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "skill"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "skill", "SKILL.md"), []byte(
		"---\nname: s\ndescription: A skill for the runner benchmarks.\n---\n\nDo nothing.\n"), 0o644))
	fx := filepath.Join(dir, "fx")
	must(os.MkdirAll(fx, 0o755))
	must(os.WriteFile(filepath.Join(fx, ".bench-nonce"), []byte(nonce()+"\n"), 0o644))
	if s.fixture != nil {
		s.fixture(tb, fx)
	}
	var cmd []string
	for _, a := range s.command {
		cmd = append(cmd, strconv.Quote(a))
	}
	src := fmt.Sprintf(`package b

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: %q
	skills: s: path: "skill"
	agent: agents.command & {command: [%s]%s}
	trials: %d
	arms: {%s}
	cases: {%s}
	policy: policies.advisory
}
`, s.name, strings.Join(cmd, ", "), s.agentModel(), s.trials, s.arm(), benchCases(max(s.cases, 1)))
	must(os.WriteFile(filepath.Join(dir, "suite.cue"), []byte(src), 0o644))
	p, err := plan.CompileDir(dir)
	if err != nil {
		tb.Fatal(suite.PrintError(err, dir))
	}
	if len(p.Cells) != s.trials*max(s.cases, 1) {
		tb.Fatalf("plan has %d cells, want %d", len(p.Cells), s.trials*max(s.cases, 1))
	}
	return dir, p
}

// arm is the suite's one arm.
func (s benchSuite) arm() string {
	if s.forced {
		return `forced: {skills: ["s"], activation: "forced"}`
	}
	return `none: {}`
}

// agentModel is the agent's provider fields: none (no gateway), or a
// scripted stand-in with one reply.
func (s benchSuite) agentModel() string {
	if s.provider == "" {
		return ""
	}
	return fmt.Sprintf(`, provider: %q, model: "m", standIn: "scripted stand-in (benchmark)", script: {model: "m", rules: [{reply: [{text: "ok"}]}]}`, s.provider)
}

// benchCases are n cases over the fixture fx, c, c-2, c-3, ..., each with
// its own prompt so that no two share rollout keys.
func benchCases(n int) string {
	cs := []string{`c: {prompt: "p", fixture: "fx"}`}
	for i := 2; i <= n; i++ {
		cs = append(cs, fmt.Sprintf(`"c-%d": {prompt: "p%d", fixture: "fx"}`, i, i))
	}
	return strings.Join(cs, ", ")
}

// bareSpec is the hardened container of the plan's cells, for the API floor
// (docker.Engine.RunBare): its image, the plan's limits and agent user, a
// read-only bind like the gateway's, and cmd.
func bareSpec(b *testing.B, p *plan.Plan, image string, cmd ...string) docker.ContainerSpec {
	b.Helper()
	mem, err := suite.ParseBytes(p.Limits.Memory)
	if err != nil {
		b.Fatal(err)
	}
	return docker.ContainerSpec{
		Image: image, Cmd: cmd, User: p.Agent.User, WorkingDir: docker.Workspace,
		Binds:  []string{b.TempDir() + ":/skillgate-gateway:ro"},
		Labels: map[string]string{docker.LabelSuite: p.Suite.Name},
		Memory: mem, NanoCPUs: int64(p.Limits.CPUs * 1e9), PidsLimit: p.Limits.Pids,
	}
}

func nonce() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// needDocker skips without an engine and removes the suite's cell images
// when the benchmark ends.
func needDocker(b *testing.B, suite string) {
	b.Helper()
	e, err := docker.NewEngine(context.Background())
	if err != nil {
		b.Skipf("no Docker engine: %v", err)
	}
	b.Cleanup(func() {
		defer e.Close()
		// Only cell images carry the suite label (the sandbox has none), so
		// this removes the cell images of this suite and nothing else.
		if _, err := e.RemoveImages(context.Background(), docker.LabelSuite+"="+suite); err != nil {
			b.Errorf("remove cell images of %s: %v", suite, err)
		}
	})
}

// runPlan runs the whole plan into a fresh run folder and returns its wall
// time and the run folder. Every cell must complete.
func runPlan(b *testing.B, dir string, p *plan.Plan, jobs int) (time.Duration, string) {
	b.Helper()
	out := b.TempDir()
	t0 := time.Now()
	sum, err := runner.Run(context.Background(), p, runner.Options{Out: out, SuiteDir: dir, Jobs: jobs})
	el := time.Since(t0)
	if err != nil {
		b.Fatal(err)
	}
	if sum.Ran != len(p.Cells) || sum.Statuses[store.StatusCompleted] != len(p.Cells) {
		b.Fatalf("run: %+v; want %d completed cells run", sum, len(p.Cells))
	}
	return el, out
}

// rollouts reads the stored rollouts of every cell of p in out.
func rollouts(b *testing.B, p *plan.Plan, out string) []*store.Rollout {
	b.Helper()
	st, err := store.OpenStore(out)
	if err != nil {
		b.Fatal(err)
	}
	var rs []*store.Rollout
	for _, c := range p.Cells {
		r, ok, err := st.Rollout(c.Rollout)
		if err != nil || !ok {
			b.Fatalf("rollout of %s: ok=%v err=%v", c.ID, ok, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// warmUp runs the plan once in its own run folder, so the cell image is
// built, and returns the image build time (the largest Image phase of its
// cells) and the cell image's reference.
func warmUp(b *testing.B, dir string, p *plan.Plan, jobs int) (build time.Duration, image string) {
	b.Helper()
	_, out := runPlan(b, dir, p, jobs)
	var img float64
	for _, r := range rollouts(b, p, out) {
		img = max(img, r.Durations.Image)
		if image != "" && r.Inputs.CellImage != image {
			b.Fatalf("the cells ran images %s and %s, want one", image, r.Inputs.CellImage)
		}
		image = r.Inputs.CellImage
	}
	return time.Duration(img * float64(time.Second)), image
}

func dockerOut(b *testing.B, args ...string) string {
	b.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		b.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// phases sums the stored phase durations of a run's cells.
type phases struct {
	n                                           int
	image, create, start, agent, collect, total float64
	wall                                        time.Duration
}

func (ph *phases) add(rs []*store.Rollout, wall time.Duration) {
	for _, r := range rs {
		ph.n++
		ph.image += r.Durations.Image
		ph.create += r.Durations.Create
		ph.start += r.Durations.Start
		ph.agent += r.Durations.Agent
		ph.collect += r.Durations.Collect
		ph.total += r.Durations.Total
	}
	ph.wall += wall
}

// report logs the mean phases of a cell in milliseconds. The store phase is
// the rest of a cell's total (staging, writing files, commit); with one job
// the run's own overhead is the wall time beyond the cells' totals.
func (ph *phases) report(b *testing.B, what string, jobs int) {
	b.Helper()
	if ph.n == 0 {
		return
	}
	n := float64(ph.n)
	ms := func(s float64) string { return fmt.Sprintf("%.1f", s/n*1000) }
	st := ph.total - ph.image - ph.create - ph.start - ph.agent - ph.collect
	line := fmt.Sprintf("%s, mean cell (ms): total %s = image %s + create %s + start %s + agent %s + collect %s + store %s; run wall/cells %s",
		what, ms(ph.total), ms(ph.image), ms(ph.create), ms(ph.start), ms(ph.agent), ms(ph.collect), ms(st), ms(ph.wall.Seconds()))
	if jobs == 1 {
		line += "; run overhead " + ms(ph.wall.Seconds()-ph.total)
	}
	b.Log(line)
}

// BenchmarkCellOverhead compares skillgate's wall time per cell (agent
// `true`, one job, cell image prebuilt) with the API floor: the same
// hardened container (no network, capabilities dropped, init, the plan's
// memory, CPU and process limits, the agent's user, a read-only bind like the
// gateway's) created, started, waited for and removed through the engine's
// API from this process, and nothing else (docker.Engine.RunBare). Target:
// ratio ≤ 1.05. A second line compares with a bare
// `docker run --rm --network none IMAGE true`, whose own CLI process is part
// of its time. The three sides take turns going first.
func BenchmarkCellOverhead(b *testing.B) { cellOverhead(b, "bench-overhead", false) }

// BenchmarkCellOverheadSkill is BenchmarkCellOverhead for cells of an arm with
// a skill, which each container gets bound read-only from the store's
// snapshot: the API floor's containers get a bind of a folder like it at the
// same place. Target: ratio ≤ 1.05.
func BenchmarkCellOverheadSkill(b *testing.B) { cellOverhead(b, "bench-overhead-skill", true) }

func cellOverhead(b *testing.B, name string, forced bool) {
	const trials = 10
	needDocker(b, name)
	dir, p := writeSuite(b, benchSuite{name: name, trials: trials, command: []string{"true"}, forced: forced})
	_, image := warmUp(b, dir, p, 1)
	e, err := docker.NewEngine(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	bare := bareSpec(b, p, image, "true")
	if forced {
		skill := b.TempDir()
		if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: s\n---\n"), 0o444); err != nil {
			b.Fatal(err)
		}
		bare.Trees = []docker.Tree{{Host: skill, Path: docker.Workspace + "/" + p.Agent.SkillsDir + "/s"}}
	}
	// One of each first, so every side starts warm.
	dockerOut(b, "run", "--rm", "--network", "none", image, "true")
	if code, err := e.RunBare(context.Background(), bare); err != nil || code != 0 {
		b.Fatalf("bare container: exit %d, %v", code, err)
	}

	var sg, api, cli time.Duration
	var ratios, cliRatios []float64
	var ph phases
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var s, a, c time.Duration
		sides := []func(){
			func() {
				el, out := runPlan(b, dir, p, 1)
				s = el
				ph.add(rollouts(b, p, out), el)
			},
			func() {
				t0 := time.Now()
				for range trials {
					if code, err := e.RunBare(context.Background(), bare); err != nil || code != 0 {
						b.Fatalf("bare container: exit %d, %v", code, err)
					}
				}
				a = time.Since(t0)
			},
			func() {
				t0 := time.Now()
				for range trials {
					dockerOut(b, "run", "--rm", "--network", "none", image, "true")
				}
				c = time.Since(t0)
			},
		}
		for j := range sides {
			sides[(i+j)%len(sides)]()
		}
		sg, api, cli = sg+s, api+a, cli+c
		ratios = append(ratios, float64(s)/float64(a))
		cliRatios = append(cliRatios, float64(s)/float64(c))
	}
	b.StopTimer()
	cells := float64(b.N * trials)
	b.ReportMetric(sg.Seconds()/cells, "skillgate-s/cell")
	b.ReportMetric(api.Seconds()/cells, "api-floor-s/cell")
	b.ReportMetric(cli.Seconds()/cells, "docker-run-s/cell")
	b.ReportMetric(float64(sg)/float64(api), "ratio")
	b.ReportMetric(float64(sg)/float64(cli), "cli-ratio")
	b.Logf("ratio to the API floor min/median/max %s; to docker run %s", benchtest.Spread(ratios), benchtest.Spread(cliRatios))
	ph.report(b, "skillgate", 1)
}

// BenchmarkTrialSetupFixtureSize compares the time per trial of a case whose
// fixture holds 200 MB with that of an empty fixture, cell images prebuilt;
// the one-time image builds are reported apart. Target: ratio ≤ 1.2.
func BenchmarkTrialSetupFixtureSize(b *testing.B) {
	const trials = 5
	const bigName, emptyName = "bench-fixture-200mb", "bench-fixture-empty"
	needDocker(b, bigName)
	needDocker(b, emptyName)
	bigDir, bigPlan := writeSuite(b, benchSuite{name: bigName, trials: trials, command: []string{"true"},
		fixture: func(tb testing.TB, dir string) {
			// 4 files of 50 MB of random bytes, so no layer compresses them away.
			for i := range 4 {
				f, err := os.Create(filepath.Join(dir, fmt.Sprintf("blob-%d.bin", i)))
				if err != nil {
					tb.Fatal(err)
				}
				if _, err := io.CopyN(f, rand.Reader, 50<<20); err != nil {
					tb.Fatal(err)
				}
				if err := f.Close(); err != nil {
					tb.Fatal(err)
				}
			}
		}})
	emptyDir, emptyPlan := writeSuite(b, benchSuite{name: emptyName, trials: trials, command: []string{"true"}})
	buildEmpty, _ := warmUp(b, emptyDir, emptyPlan, 1)
	buildBig, bigImage := warmUp(b, bigDir, bigPlan, 1)
	// The fixture must really be in the image.
	if sz, _ := strconv.ParseInt(strings.TrimSpace(dockerOut(b, "image", "inspect", "--format", "{{.Size}}", bigImage)), 10, 64); sz < 200<<20 {
		b.Fatalf("cell image %s is %d bytes, want at least 200 MiB", bigImage, sz)
	}

	var big, empty time.Duration
	var phBig, phEmpty phases
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runBig := func() {
			el, out := runPlan(b, bigDir, bigPlan, 1)
			big += el
			phBig.add(rollouts(b, bigPlan, out), el)
		}
		runEmpty := func() {
			el, out := runPlan(b, emptyDir, emptyPlan, 1)
			empty += el
			phEmpty.add(rollouts(b, emptyPlan, out), el)
		}
		if i%2 == 0 {
			runBig()
			runEmpty()
		} else {
			runEmpty()
			runBig()
		}
	}
	b.StopTimer()
	cells := float64(b.N * trials)
	b.ReportMetric(big.Seconds()/cells, "200mb-s/trial")
	b.ReportMetric(empty.Seconds()/cells, "empty-s/trial")
	b.ReportMetric(buildBig.Seconds(), "build-200mb-s")
	b.ReportMetric(buildEmpty.Seconds(), "build-empty-s")
	b.ReportMetric(float64(big)/float64(empty), "ratio")
	// The cells alone, without the run's once-per-run-folder work (pinning
	// the fixture, hashing the live folder again after the rollouts).
	b.ReportMetric(phBig.total/phEmpty.total, "cell-ratio")
	b.ReportMetric((phBig.wall.Seconds()-phBig.total)/float64(b.N), "200mb-run-overhead-s")
	phBig.report(b, "200 MB fixture", 1)
	phEmpty.report(b, "empty fixture", 1)
}

// BenchmarkJobs runs 8 cells whose agent sleeps 2 s with 8 jobs and with 1.
// Expected: speedup ≈ 8, as the agents only wait.
func BenchmarkJobs(b *testing.B) {
	const name, trials = "bench-jobs", 8
	needDocker(b, name)
	dir, p := writeSuite(b, benchSuite{name: name, trials: trials, command: []string{"sleep", "2"}})
	warmUp(b, dir, p, trials)

	var j1, j8 time.Duration
	var ph1, ph8 phases
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		one := func() {
			el, out := runPlan(b, dir, p, 1)
			j1 += el
			ph1.add(rollouts(b, p, out), el)
		}
		eight := func() {
			el, out := runPlan(b, dir, p, 8)
			j8 += el
			ph8.add(rollouts(b, p, out), el)
		}
		if i%2 == 0 {
			one()
			eight()
		} else {
			eight()
			one()
		}
	}
	b.StopTimer()
	b.ReportMetric(j1.Seconds()/float64(b.N), "jobs1-s")
	b.ReportMetric(j8.Seconds()/float64(b.N), "jobs8-s")
	b.ReportMetric(float64(j1)/float64(j8), "speedup")
	ph1.report(b, "jobs 1", 1)
	ph8.report(b, "jobs 8", 8)
}

// BenchmarkJobsFloor runs 128 cells whose agent is `sleep 5` with
// `--jobs 128` against the engine's parallel floor: the same 128 hardened
// containers (docker.Engine.RunBare) started at once from this process,
// alternating which goes first. Both wait on the engine creating, starting
// and removing 128 containers; the target is ratio ≤ 1.05.
func BenchmarkJobsFloor(b *testing.B) {
	const name, cases, trials = "bench-jobs-floor", 2, 64
	const jobs = cases * trials
	needDocker(b, name)
	dir, p := writeSuite(b, benchSuite{name: name, cases: cases, trials: trials, command: []string{"sleep", "5"}})
	_, image := warmUp(b, dir, p, jobs)
	e, err := docker.NewEngine(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	bare := bareSpec(b, p, image, "sleep", "5")
	floor := func() time.Duration {
		t0 := time.Now()
		errs := make(chan error, jobs)
		for range jobs {
			go func() {
				code, err := e.RunBare(context.Background(), bare)
				if err == nil && code != 0 {
					err = fmt.Errorf("exit %d", code)
				}
				errs <- err
			}()
		}
		for range jobs {
			if err := <-errs; err != nil {
				b.Fatalf("bare container: %v", err)
			}
		}
		return time.Since(t0)
	}
	var sg, fl time.Duration
	var ratios []float64
	var ph phases
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var s, f time.Duration
		run := func() {
			el, out := runPlan(b, dir, p, jobs)
			s = el
			ph.add(rollouts(b, p, out), el)
		}
		if i%2 == 0 {
			run()
			f = floor()
		} else {
			f = floor()
			run()
		}
		sg, fl = sg+s, fl+f
		ratios = append(ratios, float64(s)/float64(f))
	}
	b.StopTimer()
	b.ReportMetric(sg.Seconds()/float64(b.N), "skillgate-s")
	b.ReportMetric(fl.Seconds()/float64(b.N), "floor-s")
	b.ReportMetric(float64(sg)/float64(fl), "ratio")
	b.Logf("ratio min/median/max %s", benchtest.Spread(ratios))
	ph.report(b, "jobs 128", jobs)
}

// BenchmarkPinTree measures what pinning a fixture costs once per run
// folder: PinTree of a 200 MB tree (copy, hash every byte, check it against
// the plan) against a plain copy of the same files, alternating. The ratio
// is the price of verifying while copying.
func BenchmarkPinTree(b *testing.B) {
	src := b.TempDir()
	for i := range 4 {
		f, err := os.Create(filepath.Join(src, fmt.Sprintf("blob-%d.bin", i)))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyN(f, rand.Reader, 50<<20); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	tree, err := plan.HashTree(src)
	if err != nil {
		b.Fatal(err)
	}
	plainCopy := func(dst string) {
		ents, _ := os.ReadDir(src)
		for _, e := range ents {
			in, err := os.Open(filepath.Join(src, e.Name()))
			if err != nil {
				b.Fatal(err)
			}
			out, err := os.OpenFile(filepath.Join(dst, e.Name()), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o444)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(out, in); err != nil {
				b.Fatal(err)
			}
			in.Close()
			out.Close()
		}
	}
	var pin, cp time.Duration
	var ratios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var p, c time.Duration
		runPin := func() {
			st, err := store.OpenStore(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			if _, err := st.PinTree("fixture fx", src, tree); err != nil {
				b.Fatal(err)
			}
			p = time.Since(t0)
		}
		runCopy := func() {
			dst := b.TempDir()
			t0 := time.Now()
			plainCopy(dst)
			c = time.Since(t0)
		}
		if i%2 == 0 {
			runPin()
			runCopy()
		} else {
			runCopy()
			runPin()
		}
		pin, cp = pin+p, cp+c
		ratios = append(ratios, float64(p)/float64(c))
	}
	b.StopTimer()
	b.ReportMetric(pin.Seconds()/float64(b.N), "pin-s")
	b.ReportMetric(cp.Seconds()/float64(b.N), "copy-s")
	b.ReportMetric(float64(pin)/float64(cp), "ratio")
	lo, mid, hi := benchtest.MinMedMax(ratios)
	b.Logf("pin/copy per iteration: min %.2f, median %.2f, max %.2f over %d", lo, mid, hi, len(ratios))
}
