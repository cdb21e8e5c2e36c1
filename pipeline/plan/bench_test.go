package plan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/suite/suitetest"

	cuecmd "cuelang.org/go/cmd/cue/cmd"
)

// generateSuite writes a suite of n cases over 4 arms and the given trials,
// with the schema vendored so plain cue can vet it too.
func generateSuite(tb testing.TB, n, trials int) string {
	tb.Helper()
	root := tb.TempDir()
	files := map[string]string{}
	for k, v := range suitetest.BaseSuite {
		if k != "suite/cases.cue" {
			files[k] = v
		}
	}
	files["suite/suite.cue"] = strings.Replace(files["suite/suite.cue"], `forced: {skills: ["cl"], activation: "forced"}`,
		fmt.Sprintf(`forced: {skills: ["cl"], activation: "forced"}
		automatic: {skills: ["cl"]}
		other: {skills: ["cl"]}
	}
	trials: %d
	arms: {`, trials), 1)
	var b strings.Builder
	b.WriteString("package s\n\nimport \"skillgate.dev/schema\"\n\nschema.#Suite & {\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `	cases: "case-%04d": {
		prompt:  "Add a changelog entry for change %d."
		fixture: "fixtures/repo"
		split:   "validation"
		tags: ["markdown"]
		routing: skills: required: ["cl"]
		writes: ["CHANGELOG.md"]
		assert: [
			{file: "CHANGELOG.md", contains: "change %d"},
			{answer: {notMatches: "(?i)I cannot"}},
			{run: "grep -q '^## ' \"$WORLD/CHANGELOG.md\""},
		]
	}
`, i, i, i)
	}
	b.WriteString("}\n")
	files["suite/cases.cue"] = b.String()
	os.Mkdir(filepath.Join(root, ".git"), 0o755)
	for p, body := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := suite.WriteSchema(filepath.Join(root, "suite")); err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(root, "suite")
}

// BenchmarkVetVersusCue vets a 500-case suite with skillgate and with plain
// `cue vet -c`, in one process with the same runtime settings (Go's default
// collector on both sides), alternating which goes first, and reports
// skillgate's wall time and CPU time (the process's user + system time over
// each side) as ratios of cue's (target ≤ 1.3 for both: CUE's own evaluation
// is the floor), with min/median/max of the per-iteration ratios.
func BenchmarkVetVersusCue(b *testing.B) {
	dir := generateSuite(b, 500, 3)
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		b.Fatal(err)
	}
	defer os.Chdir(wd)
	vet := func() {
		if err := suite.VetSuites([]string{"."}); err != nil {
			b.Fatal(suite.PrintError(err, dir))
		}
	}
	cue := func() {
		cmd, err := cuecmd.New([]string{"vet", "-c", "."})
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	// measure runs f after a collection, so neither side pays for the
	// other's garbage. A cue command stays reachable from cue's global
	// help topics until the next one is made, and with it the whole
	// evaluation it ran (27 MB for this suite), which every collection
	// during skillgate's side would mark again: one is made, not run,
	// before the collection, as a cue run's own start does.
	measure := func(f func()) (wall, cpu time.Duration) {
		if _, err := cuecmd.New([]string{"vet"}); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		c0, t0 := processCPU(b), time.Now()
		f()
		return time.Since(t0), processCPU(b) - c0
	}
	var sgWall, sgCPU, cueWall, cueCPU time.Duration
	var wallRatios, cpuRatios []float64
	for i := 0; i < b.N; i++ {
		var sw, sc, cw, cc time.Duration
		if i%2 == 0 {
			sw, sc = measure(vet)
			cw, cc = measure(cue)
		} else {
			cw, cc = measure(cue)
			sw, sc = measure(vet)
		}
		sgWall, sgCPU, cueWall, cueCPU = sgWall+sw, sgCPU+sc, cueWall+cw, cueCPU+cc
		wallRatios = append(wallRatios, float64(sw)/float64(cw))
		cpuRatios = append(cpuRatios, float64(sc)/float64(cc))
	}
	b.ReportMetric(float64(sgWall.Milliseconds())/float64(b.N), "skillgate-ms/op")
	b.ReportMetric(float64(cueWall.Milliseconds())/float64(b.N), "cue-ms/op")
	b.ReportMetric(float64(sgWall)/float64(cueWall), "ratio")
	b.ReportMetric(float64(sgCPU)/float64(cueCPU), "cpu-ratio")
	b.Logf("wall ratio min/median/max %s; CPU ratio %s", spread(wallRatios), spread(cpuRatios))
}

// processCPU is the user and system time the process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// spread formats min/median/max of xs.
func spread(xs []float64) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	return fmt.Sprintf("%.2f/%.2f/%.2f", s[0], s[len(s)/2], s[len(s)-1])
}

// BenchmarkPlan10000Cells loads and compiles 500 cases × 4 arms × 5 trials
// (target: under 1 s an operation).
func BenchmarkPlan10000Cells(b *testing.B) {
	dir := generateSuite(b, 500, 5)
	var live uint64
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := CompileDir(dir)
		if err != nil {
			b.Fatal(suite.PrintError(err, dir))
		}
		if len(p.Cells) != 10000 {
			b.Fatalf("cells = %d", len(p.Cells))
		}
		_ = p.Encode()
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		live += after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(p)
		b.StartTimer()
	}
	// The plan held, its cases included, per cell (target ≤ 2 KB).
	b.ReportMetric(float64(live)/float64(b.N)/10000, "live-B/cell")
}

// BenchmarkPlanMillionCells loads and compiles 2,500 cases × 4 arms × 100
// trials = 1,000,000 cells and encodes the plan (targets: under 10 s, under
// 2 GiB at its peak, and at most 2 KB of live heap per cell while the plan is
// held). The wall time is the machine's to give; cpu-s/plan is the work, the
// same on a busy machine. The peak is the process's (VmHWM), so run it alone:
// go test ./pipeline/plan -run '^$' -bench PlanMillionCells -benchtime 1x.
func BenchmarkPlanMillionCells(b *testing.B) {
	dir := generateSuite(b, 2500, 100)
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t0, c0 := time.Now(), processCPU(b)
		p, err := CompileDir(dir)
		if err != nil {
			b.Fatal(suite.PrintError(err, dir))
		}
		enc := p.Encode()
		elapsed, cpu := time.Since(t0), processCPU(b)-c0
		if len(p.Cells) != 1_000_000 {
			b.Fatalf("cells = %d", len(p.Cells))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(elapsed.Seconds(), "s/plan")
		b.ReportMetric(cpu.Seconds(), "cpu-s/plan")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "live-B/cell")
		b.ReportMetric(float64(len(enc))/1e6, "json-B/cell")
		b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak-MiB")
		runtime.KeepAlive(p)
	}
}

// peakRSS is the process's peak resident set size in bytes (VmHWM).
func peakRSS(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb)
			return kb << 10
		}
	}
	tb.Fatal("no VmHWM in /proc/self/status")
	return 0
}
