// Package benchtest holds what the runner's benchmarks share: the spread of
// per-iteration ratios and their mean, a tree of random files to measure
// with, and the process's CPU time.
package benchtest

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// MinMedMax are the least, the median and the greatest of xs.
func MinMedMax(xs []float64) (lo, mid, hi float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[0], s[len(s)/2], s[len(s)-1]
}

// Spread formats the least, the median and the greatest of xs as
// "min/median/max".
func Spread(xs []float64) string {
	lo, mid, hi := MinMedMax(xs)
	return fmt.Sprintf("%.2f/%.2f/%.2f", lo, mid, hi)
}

// ReportSpread reports the least, the median and the greatest of xs as the
// metrics NAME-min, NAME-median and NAME-max.
func ReportSpread(b *testing.B, name string, xs []float64) {
	lo, mid, hi := MinMedMax(xs)
	b.ReportMetric(lo, name+"-min")
	b.ReportMetric(mid, name+"-median")
	b.ReportMetric(hi, name+"-max")
}

// Mean is the mean of xs.
func Mean(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

// RandomTree writes, in a fresh temporary folder, folders folders of files
// files of 4 KB of random bytes each (dNNN/fNNN) and returns the folder.
func RandomTree(tb testing.TB, folders, files int) string {
	tb.Helper()
	dir := tb.TempDir()
	data := make([]byte, 4096)
	for d := range folders {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			tb.Fatal(err)
		}
		for f := range files {
			rand.Read(data)
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d", f)), data, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return dir
}

// CPUTime is the user and system time the process has used.
func CPUTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
