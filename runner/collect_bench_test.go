package runner_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/skillgate/skillgate/runner/internal/benchtest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// collectSuite is a suite whose cases write what BenchmarkCollect measures into a fixture
// with an existing folder: one small file; 1,000 and 50,000 new files in the folder; a
// 1 GiB file (stored whole: limits.collect allows it here), with a redactEnv secret so the
// streaming redactor is on the path.
const collectSuite = `package b

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "bench-collect"
	skills: s: path: "skill"
	agent: agents.command & {command: ["sh", "-c", _agent]}
	_agent: """
		case $SKILLGATE_PROMPT in
		small) echo x >data/new.txt ;;
		k1) i=0; while [ $i -lt 1000 ]; do echo $i >data/n$i; i=$((i+1)); done ;;
		k50) cd data && seq 1 50000 | xargs touch ;;
		g1) head -c 1073741824 /dev/zero >big.bin ;;
		esac
		"""
	trials: 1
	redactEnv: ["SKILLGATE_BENCH_SECRET"]
	limits: {
		timeout: "10m"
		memory:  "1g"
		collect: {fileBytes: "2g", totalBytes: "4g", entries: 100000, timeout: "10m"}
	}
	arms: none: {}
	cases: {
		small: {prompt: "small", fixture: "fx"}
		k1: {prompt: "k1", fixture: "fx"}
		k50: {prompt: "k50", fixture: "fx"}
		g1: {prompt: "g1", fixture: "fx"}
	}
	policy: policies.advisory
}
`

// BenchmarkCollect measures what reading a cell's workspace back costs skillgate as the
// agent's writes grow, against a cell that writes one small file, in the same run: the
// collection's wall time (the rollout's collect phase) and skillgate's peak RSS (the
// whole `skillgate run` process, from its rusage). Each case runs in its own process and
// run folder, so no figure includes another case.
func BenchmarkCollect(b *testing.B) {
	needDocker(b, "bench-collect")
	dir := b.TempDir()
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "skill"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "skill", "SKILL.md"), []byte("---\nname: s\ndescription: A skill for the collection benchmark.\n---\n"), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "fx", "data"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "fx", ".bench-nonce"), []byte(nonce()+"\n"), 0o644))
	for i := 0; i < 10; i++ {
		must(os.WriteFile(filepath.Join(dir, "fx", "data", fmt.Sprintf("old%d", i)), []byte("old\n"), 0o644))
	}
	must(os.WriteFile(filepath.Join(dir, "suite.cue"), []byte(collectSuite), 0o644))
	bin := buildBenchCLI(b)
	p, err := plan.CompileDir(dir)
	if err != nil {
		b.Fatal(suite.PrintError(err, dir))
	}
	b.Setenv("SKILLGATE_BENCH_SECRET", "sk-bench-"+nonce())
	// The cell image is built once, outside the figures.
	if _, _, err := collectCase(b, bin, dir, p, "small"); err != nil {
		b.Fatal(err)
	}
	cases := []string{"small", "k1", "k50", "g1"}
	secs := map[string][]float64{}
	rss := map[string][]float64{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, c := range cases {
			s, r, err := collectCase(b, bin, dir, p, c)
			if err != nil {
				b.Fatal(err)
			}
			secs[c], rss[c] = append(secs[c], s), append(rss[c], r)
		}
	}
	b.StopTimer()
	for _, c := range cases {
		b.ReportMetric(benchtest.Mean(secs[c]), c+"-collect-s")
		b.ReportMetric(benchtest.Mean(rss[c]), c+"-maxrss-MiB")
		if c != "small" {
			b.ReportMetric(benchtest.Mean(secs[c])/benchtest.Mean(secs["small"]), c+"-collect-ratio")
			b.ReportMetric(benchtest.Mean(rss[c])/benchtest.Mean(rss["small"]), c+"-rss-ratio")
		}
	}
}

// collectCase runs one case of the collection suite in a fresh run folder and returns its
// collect phase in seconds and the process's peak RSS in MiB.
func collectCase(b *testing.B, bin, dir string, p *plan.Plan, id string) (float64, float64, error) {
	b.Helper()
	out := b.TempDir()
	cmd := exec.Command(bin, "run", dir, "--out", out, "--case", id, "--jobs", "1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		return 0, 0, err
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0, fmt.Errorf("no rusage")
	}
	var cell plan.Cell
	for _, c := range p.Cells {
		if c.Case == id {
			cell = c
		}
	}
	ro, ok, err := (&store.Store{Dir: out}).Rollout(cell.Rollout)
	if err != nil || !ok || ro.Status != store.StatusCompleted {
		return 0, 0, fmt.Errorf("case %s: rollout %v %v (%+v)\n%s", id, ok, err, ro, stderr.String())
	}
	b.Logf("%s: %d changes, collection %+v, collect %.3fs, maxrss %d MiB", id, len(ro.Changes), ro.Collection, ro.Durations.Collect, ru.Maxrss>>10)
	os.RemoveAll(out)
	return ro.Durations.Collect, float64(ru.Maxrss) / 1024, nil
}

// buildBenchCLI builds skillgate for benchmarks that measure whole processes.
func buildBenchCLI(b *testing.B) string {
	b.Helper()
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(b.TempDir(), "skillgate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/skillgate")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(mod)))
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build skillgate: %v\n%s", err, out)
	}
	return bin
}
