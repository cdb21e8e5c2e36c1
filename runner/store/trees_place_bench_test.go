package store_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/internal/benchtest"
	"github.com/skillgate/skillgate/runner/store"
)

// BenchmarkLinkTreeKnown measures the placing alone, without the cache
// around it (its stat record read and written, its lock): LinkTreeKnown of
// a 20,000-file snapshot (200 folders of 100 files of 4 KB) into a fresh
// folder, given what the previous placement returned, so every file is
// trusted by its stat, against `cp -al` of a copy of the same snapshot
// (cp's own, so that its links leave the stats known unchanged), taking
// turns going first. ratio is wall time, cpu-ratio CPU time.
func BenchmarkLinkTreeKnown(b *testing.B) {
	if _, err := exec.LookPath("cp"); err != nil {
		b.Skip("no cp")
	}
	live := benchtest.RandomTree(b, 200, 100)
	want, err := plan.HashTree(live)
	if err != nil {
		b.Fatal(err)
	}
	snap := filepath.Join(b.TempDir(), "snap")
	if err := os.Mkdir(snap, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := store.CopyTree(live, snap, want); err != nil {
		b.Fatal(err)
	}
	known, err := store.LinkTreeKnown(snap, b.TempDir(), want, nil)
	if err != nil {
		b.Fatal(err)
	}
	same := filepath.Join(b.TempDir(), "snap")
	if out, err := exec.Command("cp", "-a", snap, same).CombinedOutput(); err != nil {
		b.Fatalf("cp -a: %v: %s", err, out)
	}
	cpu := func() time.Duration { return benchtest.CPUTime(b) }
	var ratios, cpuRatios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var pw, pc, cw, cc time.Duration
		place := func() {
			dst := b.TempDir()
			t0, c0 := time.Now(), cpu()
			if known, err = store.LinkTreeKnown(snap, dst, want, known); err != nil {
				b.Fatal(err)
			}
			pw, pc = time.Since(t0), cpu()-c0
		}
		copyLinks := func() {
			cmd := exec.Command("cp", "-al", same, filepath.Join(b.TempDir(), "snap"))
			t0 := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("cp -al: %v: %s", err, out)
			}
			cw, cc = time.Since(t0), cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime()
		}
		if i%2 == 0 {
			place()
			copyLinks()
		} else {
			copyLinks()
			place()
		}
		ratios = append(ratios, float64(pw)/float64(cw))
		cpuRatios = append(cpuRatios, float64(pc)/float64(max(cc, time.Millisecond)))
	}
	b.StopTimer()
	benchtest.ReportSpread(b, "ratio", ratios)
	benchtest.ReportSpread(b, "cpu-ratio", cpuRatios)
	b.Logf("LinkTreeKnown/cp -al over %d: wall min/median/max %s, CPU %s", len(ratios), benchtest.Spread(ratios), benchtest.Spread(cpuRatios))
}
