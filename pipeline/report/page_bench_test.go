package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// BenchmarkReportPageLoad measures report.html of a 5,000-cell run against a 90-cell one
// (the demo's size), both with full evidence per cell, in headless Chromium: the time from
// a harness page's start to the load of report.html in its iframe, opened on a failed
// cell (#cell=…, so the viewer's work is in it). Each iteration loads both pages, in
// alternating order, in fresh browser processes with the same flags. It reports each
// median, their ratio, and the size of each page and of its writing.
func BenchmarkReportPageLoad(b *testing.B) {
	chromium := "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		b.Skipf("no %s (apt-get install chromium)", chromium)
	}
	type page struct {
		name  string
		dir   string
		bytes int
		write time.Duration
		loads []float64
	}
	pages := []*page{{name: "90"}, {name: "5000"}}
	for _, p := range pages {
		n, _ := strconv.Atoi(p.name)
		r, ev, open := benchReport(n)
		p.dir = b.TempDir()
		start := time.Now()
		if err := WriteReportsWith(p.dir, r, ev); err != nil {
			b.Fatal(err)
		}
		p.write = time.Since(start)
		st, err := os.Stat(filepath.Join(p.dir, FileReportHTML))
		if err != nil {
			b.Fatal(err)
		}
		p.bytes = int(st.Size())
		harness := `<!doctype html><meta charset="utf-8"><pre id="out"></pre>
<script>var t0 = performance.now();</script>
<iframe id="f" style="width:1280px;height:900px" onload="document.getElementById('out').textContent = 'LOADED ' + (performance.now() - t0).toFixed(1)" src="` + FileReportHTML + cellHref(open) + `"></iframe>`
		if err := os.WriteFile(filepath.Join(p.dir, "harness.html"), []byte(harness), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	loaded := regexp.MustCompile(`LOADED ([0-9.]+)`)
	load := func(p *page) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
			"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--disable-dev-shm-usage", "--window-size=1400,1000", "--user-data-dir="+b.TempDir(), "--dump-dom",
			"file://"+filepath.Join(p.dir, "harness.html"))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			b.Fatalf("chromium: %v\n%s", err, errb.String())
		}
		m := loaded.FindStringSubmatch(out.String())
		if m == nil {
			b.Fatalf("the harness of the %s-cell page recorded no load:\n%.2000s", p.name, out.String())
		}
		ms, _ := strconv.ParseFloat(m[1], 64)
		p.loads = append(p.loads, ms)
	}
	load(pages[0]) // a warm-up: the browser's own files into the page cache
	pages[0].loads = nil
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, k := range []int{i % 2, 1 - i%2} {
			load(pages[k])
		}
	}
	b.StopTimer()
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	small, big := pages[0], pages[1]
	b.ReportMetric(median(small.loads), "90-ms/load")
	b.ReportMetric(median(big.loads), "5000-ms/load")
	b.ReportMetric(median(big.loads)/median(small.loads), "ratio")
	b.ReportMetric(float64(small.bytes)/(1<<20), "90-MiB")
	b.ReportMetric(float64(big.bytes)/(1<<20), "5000-MiB")
	b.ReportMetric(big.write.Seconds()/small.write.Seconds(), "write-ratio")
	b.Logf("loads (ms): 90 cells %v; 5000 cells %v; writes %v and %v", small.loads, big.loads, small.write, big.write)
}

// benchReport is a run of about n cells (three arms, three trials, n/9 cases) with the
// evidence a real session leaves per cell (a prompt, a dozen turns, an answer, a diff of
// two files, three checks), a third of the cells failed, and a failing rule that names
// every failed cell. It returns a failed cell to open.
func benchReport(n int) (*verdict.Report, *Evidence, string) {
	r := richReport()
	r.Cases = nil
	ev := &Evidence{Cells: map[string]CellEvidence{}}
	var failed []string
	for c := 0; c*9 < n; c++ {
		id := fmt.Sprintf("case-%04d", c)
		oc := verdict.CaseReport{ID: id, Split: "train", Kind: "task", Trials: map[string][]verdict.TrialOutcome{}}
		for _, arm := range []string{"none", "before", "after"} {
			pattern := "PPF"
			if c%3 == 1 {
				pattern = "PFP"
			}
			oc.Trials[arm] = rptTrials(id, arm, pattern, `file CHANGELOG.md contains "retry"`)
			for _, t := range oc.Trials[arm] {
				if !t.Passed {
					failed = append(failed, t.Cell)
				}
				ev.Cells[t.Cell] = benchEvidence(t)
			}
		}
		r.Cases = append(r.Cases, oc)
	}
	r.Verdict.Rules[0].Findings = []verdict.Finding{{Reason: "REGRESSION many", Text: "Many cases regressed.", Cells: failed}}
	return r, ev, failed[0]
}

func benchEvidence(t verdict.TrialOutcome) CellEvidence {
	line := strings.Repeat("Rotate the retry budget after each 503 and log it. ", 2)
	var turns []Turn
	for i := range 6 {
		turns = append(turns, Turn{Role: "assistant", Text: fmt.Sprintf("Step %d: %s", i, line)},
			Turn{Role: "tool", Tool: "Bash", Input: fmt.Sprintf("sed -n %d,40p src/retry.go", i), Result: strings.Repeat("func retry() error { return nil }\n", 8)})
	}
	diff := "--- a/CHANGELOG.md\n+++ b/CHANGELOG.md\n@@ -1,3 +1,4 @@\n # Changelog\n+- Retries on HTTP 503 now back off.\n \n" + strings.Repeat(" "+line+"\n", 10)
	return CellEvidence{
		Cell: t.Cell, Status: t.Status, Passed: t.Passed,
		Prompt: "Add a changelog entry for the change in NOTES.md. " + line, Turns: turns,
		Answer: "I added the entry under Unreleased. " + line,
		Diffs:  []FileDiff{{Path: "CHANGELOG.md", Kind: "modified", Diff: diff}, {Path: "src/retry.go", Kind: "modified", Diff: diff}},
		Checks: []grade.CheckResult{
			{Name: `file CHANGELOG.md contains "retry"`, Kind: grade.CheckFile, Passed: t.Passed, Detail: "not found"},
			{Name: "writes only [CHANGELOG.md]", Kind: grade.CheckWrites, Passed: true},
			{Name: `answer matches "Unreleased"`, Kind: grade.CheckAnswer, Passed: true},
		},
		AgentSeconds: 41.2, TotalSeconds: 44.5, Tokens: &grade.Tokens{Input: 18000, Output: 900},
		Files: map[string]string{"transcript": rolloutHref(t, "stdout.txt")},
	}
}
