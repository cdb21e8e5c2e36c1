package suite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// policy.sequential where stopping early cannot apply is a vet error
// saying why, with its position; where it can, the suite loads with the
// schema's defaults.
func TestSequentialVet(t *testing.T) {
	const base = `policies.advisory & {uplift: minPoints: 15}`
	root := suitetest.WriteSuite(t, suitetest.Edit(t, "suite/suite.cue", base, `policies.advisory & {uplift: minPoints: 15, sequential: {}}`))
	s, err := LoadSuite(filepath.Join(root, "suite"))
	if err != nil {
		t.Fatalf("advisory with sequential: %s", PrintError(err, root))
	}
	if q := s.Policy.Sequential; q == nil || q.Alpha != 0.05 || q.Round != 1 || q.Futility != 0.1 || q.Share != 0.7 {
		t.Errorf("sequential: {} = %+v, want the schema's defaults", q)
	}
	for _, tc := range []struct {
		name, policy string
		want         []string
	}{
		{"gstack's fixed panels", `policies.gstack & {sequential: {}}`, []string{
			"policy.sequential: cannot apply with policy.regression: it judges each case's panel by its passes (2 of its trials, gstack's bar)",
			"with policy.uncovered", "with policy.rerunRed: it runs a red panel's trials again after a result", "suite/suite.cue:"}},
		{"skillopt's run keys", `policies.skillopt & {sequential: {}}`, []string{"with policy.runKeys: it asks a fixed number of run keys per case"}},
		{"efficacy's wins", `policies.efficacy & {sequential: {}}`, []string{"with policy.efficacy", "compares no two arms"}},
		{"one round holds every trial", `policies.advisory & {sequential: round: 3}`, []string{"policy.sequential: round is 3 trials of the plan's 3"}},
		{"misspelt field", `policies.advisory & {sequential: alhpa: 0.1}`, []string{"policy.sequential.alhpa: field not allowed"}},
		{"share not above a half", `policies.advisory & {sequential: share: 0.5}`, []string{"policy.sequential.share"}},
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
