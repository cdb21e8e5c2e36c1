package cache

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/internal/benchtest"
	"github.com/skillgate/skillgate/runner/store"
)

// bigTree writes a live folder of folders x files files of 4 KB of random
// bytes and returns it with its tree.
func bigTree(b *testing.B, folders, files int) (string, plan.Tree) {
	b.Helper()
	dir := benchtest.RandomTree(b, folders, files)
	tree, err := plan.HashTree(dir)
	if err != nil {
		b.Fatal(err)
	}
	return dir, tree
}

// BenchmarkPlaceCachedTree measures what a fresh run folder pays to take a
// tree the cache already holds: a fresh store's PinTree of a 20,000-file
// tree (200 folders of 100 files of 4 KB) through the cache, every file
// linked and proven to be the plan's bytes by the snapshot's stat record,
// against `cp -al` of a copy of the same snapshot folder into a fresh
// folder (a hard link for every file, nothing checked), the two taking
// turns going first. The copy is cp's own so that cp's links do not change
// the change times the cache's stat record holds, which would have every
// placement hash every file. ratio is wall time, cpu-ratio CPU time (this
// process's against cp's). Run folders are kept until the end: removing
// one unlinks the cache's files, which changes their change times too.
func BenchmarkPlaceCachedTree(b *testing.B) {
	if _, err := exec.LookPath("cp"); err != nil {
		b.Skip("no cp")
	}
	src, tree := bigTree(b, 200, 100)
	c, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	pin := func() {
		st, err := store.OpenStore(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		st.Shared = c
		if _, err := st.PinTree("fixture fx", src, tree); err != nil {
			b.Fatal(err)
		}
	}
	pin() // made, then linked: the stat record holds the stats after the link
	pin()
	same := filepath.Join(b.TempDir(), "snapshot")
	if out, err := exec.Command("cp", "-a", c.TreeDir(tree.Digest), same).CombinedOutput(); err != nil {
		b.Fatalf("cp -a: %v: %s", err, out)
	}

	var ratios, cpuRatios []float64
	var placeWall, cpWall time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var pw, pc, cw, cc time.Duration
		place := func() {
			t0, c0 := time.Now(), benchtest.CPUTime(b)
			pin()
			pw, pc = time.Since(t0), benchtest.CPUTime(b)-c0
		}
		copyLinks := func() {
			dst := filepath.Join(b.TempDir(), "snapshot")
			cmd := exec.Command("cp", "-al", same, dst)
			t0 := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("cp -al: %v: %s", err, out)
			}
			cw = time.Since(t0)
			cc = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		if i%2 == 0 {
			place()
			copyLinks()
		} else {
			copyLinks()
			place()
		}
		placeWall, cpWall = placeWall+pw, cpWall+cw
		ratios = append(ratios, float64(pw)/float64(cw))
		cpuRatios = append(cpuRatios, float64(pc)/float64(max(cc, time.Millisecond)))
	}
	b.StopTimer()
	b.ReportMetric(placeWall.Seconds()/float64(b.N), "place-s")
	b.ReportMetric(cpWall.Seconds()/float64(b.N), "cp-al-s")
	benchtest.ReportSpread(b, "ratio", ratios)
	benchtest.ReportSpread(b, "cpu-ratio", cpuRatios)
	b.Logf("place/cp -al over %d: wall min/median/max %s, CPU %s", len(ratios), benchtest.Spread(ratios), benchtest.Spread(cpuRatios))
}
