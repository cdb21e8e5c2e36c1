package inference

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The closed form is the integral, by the midpoint rule.
func TestMixtureLogEIsTheIntegral(t *testing.T) {
	for _, c := range [][2]int{{0, 0}, {1, 1}, {0, 1}, {3, 5}, {9, 10}, {20, 30}, {5, 40}} {
		x, k := c[0], c[1]
		const steps = 200000
		sum := 0.0
		for i := range steps {
			pi := 0.5 + (float64(i)+0.5)/steps*0.4
			sum += math.Exp(float64(x)*math.Log(2*pi)+float64(k-x)*math.Log(2*(1-pi))) / steps
		}
		if got := math.Exp(mixtureLogE(x, k, 0.9)); math.Abs(got-sum) > 1e-6*max(1, sum) {
			t.Errorf("E(%d of %d) = %v, integral %v", x, k, got, sum)
		}
	}
	// One win of one pair: ∫ 2π dπ / 0.4 over [1/2, 0.9] = (0.81 − 0.25)/0.4 = 1.4.
	if got := math.Exp(mixtureLogE(1, 1, 0.9)); math.Abs(got-1.4) > 1e-12 {
		t.Errorf("E(1 of 1) = %v, want 1.4", got)
	}
}

func TestSequentialDecide(t *testing.T) {
	s, err := NewSequential(0.05, 0.7, 0.1, 100)
	if err != nil {
		t.Fatal(err)
	}
	// Nine wins of nine: E = 2^10·B(10,1)·(1 − 2^-10) = 102.3 ≥ 20.
	if got := s.Decide(9, 0, 50); got != SequentialEffect {
		t.Errorf("9 of 9: %s", got)
	}
	if got := s.Decide(3, 2, 50); got != SequentialContinue {
		t.Errorf("3 of 5: %s", got)
	}
	// Many losses: Wald's boundary, ln(0.1/0.95) = −2.25; 2 wins, 8
	// losses is 2·ln1.4 + 8·ln0.6 = −3.41.
	if got := s.Decide(2, 8, 50); got != SequentialFutility {
		t.Errorf("2 of 10: %s", got)
	}
	// Two pairs left cannot lift E from 0 of 4 to 20.
	if got := s.Decide(0, 4, 2); got != SequentialFutility {
		t.Errorf("0 of 4, two left: %s", got)
	}
	for _, bad := range [][3]float64{{0, 0.7, 0.1}, {0.05, 0.5, 0.1}, {0.05, 0.7, 1}} {
		if _, err := NewSequential(bad[0], bad[1], bad[2], 10); err == nil {
			t.Errorf("NewSequential(%v): no error", bad)
		}
	}
}

// scenario is a simulated plan: cases whose pass rates differ (drawn
// uniformly in [0.2, 0.8] per simulated run), rounds of one trial per case
// and arm, the candidate's pass rate raised by uplift in every case.
type scenario struct {
	cases, rounds int
	uplift        float64
}

// simulation is what runs of a scenario did.
type simulation struct {
	runs int
	// effect counts runs stopped for effect, peeking after every round;
	// everyPair those whose E crossed 1/α after any pair, had one peeked
	// after every pair and never stopped for futility.
	effect, everyPair, fixedEffect int
	// rounds is each run's rounds run.
	rounds []int
}

func simulate(s *Sequential, sc scenario, runs int, seed uint64) simulation {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := simulation{runs: runs, rounds: make([]int, runs)}
	bound := -math.Log(s.Alpha)
	rates := make([]float64, sc.cases)
	diffs := make([]int, sc.cases)
	for run := range runs {
		for i := range rates {
			rates[i] = 0.2 + 0.6*rng.Float64()
			diffs[i] = 0
		}
		wins, losses, crossed, stopped := 0, 0, false, false
		for r := 1; r <= sc.rounds; r++ {
			for i, p := range rates {
				b, c := rng.Float64() < p, rng.Float64() < min(1, p+sc.uplift)
				switch {
				case c && !b:
					wins++
					diffs[i]++
				case b && !c:
					losses++
					diffs[i]--
				}
				crossed = crossed || s.logE(wins, wins+losses) >= bound
			}
			if stopped {
				continue
			}
			switch s.Decide(wins, losses, (sc.rounds-r)*sc.cases) {
			case SequentialEffect:
				out.effect++
				stopped = true
			case SequentialFutility:
				stopped = true
			}
			if stopped || r == sc.rounds {
				out.rounds[run] = r
				stopped = true
			}
		}
		if crossed {
			out.everyPair++
		}
		// The fixed design: every round, one look, the case-level test.
		est := 0
		for _, d := range diffs {
			est += d
		}
		if est > 0 && latticeMidP(diffs) <= 2*s.Alpha {
			out.fixedEffect++
		}
	}
	return out
}

func (m simulation) meanRounds() float64 {
	sum := 0
	for _, r := range m.rounds {
		sum += r
	}
	return float64(sum) / float64(m.runs)
}

// saved is each run's share of the fixed design's trials it did not run.
func (m simulation) saved(rounds int) []float64 {
	out := make([]float64, len(m.rounds))
	for i, r := range m.rounds {
		out[i] = 1 - float64(r)/float64(rounds)
	}
	slices.Sort(out)
	return out
}

const simRuns = 10000

// Under no difference, stopping for effect after any round (and even
// looking after every pair) stays within α over 10,000 simulated runs;
// under a real difference it stops early with most of the fixed design's
// power. The seed is fixed, so the numbers are too.
func TestSequentialSimulation(t *testing.T) {
	sc := scenario{cases: 20, rounds: 5}
	s, err := NewSequential(0.05, 0.7, 0.1, sc.cases*sc.rounds)
	if err != nil {
		t.Fatal(err)
	}
	null := simulate(s, sc, simRuns, 1)
	fp, fpPair := float64(null.effect)/simRuns, float64(null.everyPair)/simRuns
	t.Logf("no difference: false positives %.4f peeking every round, %.4f every pair (α 0.05); mean rounds %.2f of %d",
		fp, fpPair, null.meanRounds(), sc.rounds)
	if fp > s.Alpha || fpPair > s.Alpha {
		t.Errorf("false-positive rate %.4f (every round), %.4f (every pair): above α %v", fp, fpPair, s.Alpha)
	}
	sc.uplift = 0.2
	alt := simulate(s, sc, simRuns, 2)
	power, fixed := float64(alt.effect)/simRuns, float64(alt.fixedEffect)/simRuns
	t.Logf("uplift 0.2: power %.4f sequential, %.4f fixed design one-sided at α; mean rounds %.2f of %d (%.1f%% of trials saved)",
		power, fixed, alt.meanRounds(), sc.rounds, 100*(1-alt.meanRounds()/float64(sc.rounds)))
	sc.uplift = 0.3
	big := simulate(s, sc, simRuns, 3)
	t.Logf("uplift 0.3: power %.4f sequential, %.4f fixed design; mean rounds %.2f of %d (%.1f%% of trials saved)",
		float64(big.effect)/simRuns, float64(big.fixedEffect)/simRuns, big.meanRounds(), sc.rounds, 100*(1-big.meanRounds()/float64(sc.rounds)))
	// The price of looking at will: an e-value needs more evidence than a
	// single look at the end, so the power is below the fixed design's;
	// what it buys is the trials it does not run.
	if power < 0.6 || alt.meanRounds() > 0.8*float64(sc.rounds) || null.meanRounds() > 0.8*float64(sc.rounds) || big.meanRounds() > alt.meanRounds() {
		t.Errorf("power %.4f, mean rounds %.2f under the uplift and %.2f under none: the test stops too late", power, alt.meanRounds(), null.meanRounds())
	}
}

// BenchmarkSequentialTrialsSaved reports the share of the fixed design's
// trials the sequential test saves per simulated run (min, median, max,
// mean), under no difference and under uplifts of 0.2 and 0.3.
func BenchmarkSequentialTrialsSaved(b *testing.B) {
	sc := scenario{cases: 20, rounds: 5}
	s, err := NewSequential(0.05, 0.7, 0.1, sc.cases*sc.rounds)
	if err != nil {
		b.Fatal(err)
	}
	var null, alt, big simulation
	for b.Loop() {
		sc.uplift = 0
		null = simulate(s, sc, simRuns, 1)
		sc.uplift = 0.2
		alt = simulate(s, sc, simRuns, 2)
		sc.uplift = 0.3
		big = simulate(s, sc, simRuns, 3)
	}
	for _, m := range []struct {
		name string
		sim  simulation
	}{{"none", null}, {"uplift0.2", alt}, {"uplift0.3", big}} {
		saved := m.sim.saved(sc.rounds)
		b.ReportMetric(100*saved[0], m.name+"-saved-min-%")
		b.ReportMetric(100*saved[len(saved)/2], m.name+"-saved-median-%")
		b.ReportMetric(100*saved[len(saved)-1], m.name+"-saved-max-%")
		b.ReportMetric(100*(1-m.sim.meanRounds()/float64(sc.rounds)), m.name+"-saved-mean-%")
	}
}

// A row made at once is the closed form at every x, bit for bit, and
// E never falls when the candidate wins one more pair (what Decide's one
// look at reachability rests on).
func TestMixtureRowIsTheClosedForm(t *testing.T) {
	for _, k := range []int{0, 1, 7, 40, 150} {
		row := mixtureRow(k, priorMax)
		for x := 0; x <= k; x++ {
			if want := mixtureLogE(x, k, priorMax); row[x] != want {
				t.Errorf("row %d at %d: %v, closed form %v", k, x, row[x], want)
			}
			if k < 150 && mixtureLogE(x+1, k+1, priorMax) < row[x]-1e-12 {
				t.Errorf("E(%d of %d) > E(%d of %d)", x, k, x+1, k+1)
			}
		}
	}
}
