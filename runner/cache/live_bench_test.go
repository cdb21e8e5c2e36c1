package cache

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/internal/benchtest"
)

// BenchmarkHashLive20k compares HashLive of a 20,000-file folder (200
// folders of 100 files of 4 KB) its index already holds, every file's
// stat trusted, with a bare walk of the same folder that lstats every file
// (filepath.WalkDir and os.Lstat): the stat work no hash of a live folder
// can skip. Each iteration times both, in turns; it reports the ratios
// HashLive / walk of wall time and of the process's CPU time as
// min/median/max.
func BenchmarkHashLive20k(b *testing.B) {
	dir := b.TempDir()
	body := bytes.Repeat([]byte("x"), 4096)
	for d := 0; d < 200; d++ {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 100; f++ {
			body[0] = byte(d)
			body[1] = byte(f)
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.txt", f)), body, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	want, err := plan.HashTree(dir)
	if err != nil {
		b.Fatal(err)
	}
	c, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(RacyMargin + 100*time.Millisecond) // every file's last change older than the margin
	if _, err := c.HashLive(dir); err != nil {    // indexes every file, none racy
		b.Fatal(err)
	}
	index, _ := filepath.Glob(filepath.Join(c.Dir, DirIndex, "*"))
	if len(index) != 1 {
		b.Fatalf("indexes %v, want one", index)
	}
	recorded, _ := os.ReadFile(index[0])

	walk := func() {
		n := 0
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			_, err = os.Lstat(p)
			n++
			return err
		})
		if err != nil || n != len(want.Files) {
			b.Fatalf("walk: %v, %d files", err, n)
		}
	}
	live := func() {
		got, err := c.HashLive(dir)
		if err != nil || got.Digest != want.Digest || len(got.Files) != len(want.Files) {
			b.Fatalf("HashLive: %v, tree %s, want %s", err, got.Digest, want.Digest)
		}
	}
	var ratios, cpus, lives, walks []float64
	for i := 0; b.Loop(); i++ {
		var tl, tw, cl, cw time.Duration
		for turn := range 2 {
			start, cpu := time.Now(), benchtest.CPUTime(b)
			if (i+turn)%2 == 0 {
				live()
				tl, cl = time.Since(start), benchtest.CPUTime(b)-cpu
			} else {
				walk()
				tw, cw = time.Since(start), benchtest.CPUTime(b)-cpu
			}
		}
		ratios = append(ratios, tl.Seconds()/tw.Seconds())
		cpus = append(cpus, cl.Seconds()/cw.Seconds())
		lives = append(lives, tl.Seconds()*1e3)
		walks = append(walks, tw.Seconds()*1e3)
	}
	if now, _ := os.ReadFile(index[0]); !bytes.Equal(now, recorded) {
		b.Fatal("the index was rewritten: a warm walk read a file")
	}
	benchtest.ReportSpread(b, "live/walk", ratios)
	benchtest.ReportSpread(b, "live/walk-cpu", cpus)
	b.Logf("HashLive / WalkDir+Lstat over %d files, %d iterations: wall %s, CPU %s (HashLive %s ms, walk %s ms)",
		len(want.Files), len(ratios), benchtest.Spread(ratios), benchtest.Spread(cpus), benchtest.Spread(lives), benchtest.Spread(walks))
}
