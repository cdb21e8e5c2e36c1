// Package benchtest holds what the runner's benchmarks share to report their
// figures: the spread of per-iteration ratios and their mean.
package benchtest

import (
	"fmt"
	"slices"
	"testing"
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
