package suite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// TestReuseMatchesTheSchema: a plan made before the schema gave #Reuse is
// read with the schema's defaults; the level follows the policy's
// inference alpha unless reuse sets its own.
func TestReuseMatchesTheSchema(t *testing.T) {
	const base = `policies.advisory & {uplift: minPoints: 15}`
	for _, tc := range []struct {
		policy string
		want   Reuse
	}{
		{base, Reuse{Sentinels: 6, Arms: []string{}, Alpha: priorAlpha}},
		{`policies.advisory & {uplift: minPoints: 15, inference: alpha: 0.1}`, Reuse{Sentinels: DefaultSentinels(0.1), Arms: []string{}, Alpha: 0.1}},
		{`policies.advisory & {uplift: minPoints: 15, inference: alpha: 0.01}`, Reuse{Sentinels: DefaultSentinels(0.01), Arms: []string{}, Alpha: 0.01}},
		{`policies.advisory & {uplift: minPoints: 15, reuse: alpha: 0.001}`, Reuse{Sentinels: DefaultSentinels(0.001), Arms: []string{}, Alpha: 0.001}},
		{`policies.advisory & {uplift: minPoints: 15, inference: alpha: 0.1, reuse: {alpha: 0.02, sentinels: 8, arms: ["none"]}}`, Reuse{Sentinels: 8, Arms: []string{"none"}, Alpha: 0.02}},
		{`policies.advisory & {uplift: minPoints: 15, reuse: sentinels: 0}`, Reuse{Sentinels: 0, Arms: []string{}, Alpha: priorAlpha}},
	} {
		root := suitetest.WriteSuite(t, suitetest.Edit(t, "suite/suite.cue", base, tc.policy))
		s, err := LoadSuite(filepath.Join(root, "suite"))
		if err != nil {
			t.Fatalf("%s: %s", tc.policy, PrintError(err, root))
		}
		got := s.Policy.Reuse
		if got == nil || got.Sentinels != tc.want.Sentinels || got.Alpha != tc.want.Alpha || strings.Join(got.Arms, ",") != strings.Join(tc.want.Arms, ",") {
			t.Errorf("%s: reuse = %+v, want %+v", tc.policy, got, tc.want)
		}
	}
	if DefaultSentinels(0.05) != 6 || DefaultSentinels(0.01) != 8 || DefaultSentinels(0.1) != 5 {
		t.Errorf("default sentinels at 0.05, 0.01, 0.1 = %d, %d, %d; want 6, 8, 5", DefaultSentinels(0.05), DefaultSentinels(0.01), DefaultSentinels(0.1))
	}
	old := ReuseOf(Policy{})
	if old.Sentinels != 6 || old.Alpha != priorAlpha || len(old.Arms) != 0 {
		t.Errorf("a plan without reuse reads %+v", old)
	}
}

// TestReuseVet: a sentinel count whose test can never refuse at the level
// is a vet error naming the smallest p it could reach, with its position;
// an arm the suite lacks too.
func TestReuseVet(t *testing.T) {
	const base = `policies.advisory & {uplift: minPoints: 15}`
	if p, _ := SmallestSentinelP(4); p != 0.0625 {
		t.Errorf("4 sentinels all flipped: p = %v, want 1/16", p)
	}
	if n := SentinelsNeeded(0.05); n != 5 {
		t.Errorf("sentinels needed at 0.05 = %d, want 5", n)
	}
	for _, tc := range []struct {
		name, policy string
		want         []string
	}{
		{"too few", `policies.advisory & {uplift: minPoints: 15, reuse: sentinels: 4}`, []string{
			"policy.reuse.sentinels: 4 sentinels can never refuse a reuse at α 0.05: with every one flipped, each of its own case, the paired test (exact McNemar mid-p on discordant cases) gives p = 0.0625; set at least 5, or 0 to turn the check off", "suite/suite.cue:"}},
		{"too few at a stricter level", `policies.advisory & {uplift: minPoints: 15, inference: alpha: 0.01, reuse: sentinels: 6}`, []string{"6 sentinels can never refuse a reuse at α 0.01", "p = 0.01563; set at least 7"}},
		{"unknown arm", `policies.advisory & {uplift: minPoints: 15, reuse: arms: ["nope"]}`, []string{`policy.reuse.arms names arm "nope"`}},
		{"negative", `policies.advisory & {uplift: minPoints: 15, reuse: sentinels: -1}`, []string{"policy.reuse.sentinels"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := suitetest.WriteSuite(t, suitetest.Edit(t, "suite/suite.cue", base, tc.policy))
			_, err := LoadSuite(filepath.Join(root, "suite"))
			if err == nil {
				t.Fatal("LoadSuite succeeded; want an error")
			}
			out := PrintError(err, root)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("error output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
