package grade

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// auditPlan is a plan of cases × arms × trials with every cell passing.
func auditPlan(cases int, arms []string, trials int) (*plan.Plan, []CellResult) {
	p := &plan.Plan{Format: plan.PlanFormat, Skills: map[string]plan.PlanSkill{}, Fixtures: map[string]plan.Tree{}}
	p.Suite.Name, p.Suite.Trials, p.Suite.Seed = "audit", trials, 7
	p.Suite.Audit.SamplePercent = 10 // the schema's default (TestBaseSuiteIsValid)
	var rs []CellResult
	for i := 1; i <= cases; i++ {
		id := fmt.Sprintf("c%03d", i)
		p.Cases = append(p.Cases, plan.PlanCase{Case: suite.Case{ID: id}})
		for _, a := range arms {
			for t := 1; t <= trials; t++ {
				c := plan.Cell{ID: plan.CellID(id, a, t), Case: id, Arm: a, Trial: t, Rollout: digest.FromString("r " + id + a + fmt.Sprint(t))}
				p.Cells = append(p.Cells, c)
				rs = append(rs, CellResult{Cell: c.ID, Case: id, Arm: a, Trial: t, Rollout: c.Rollout, Status: StatusCompleted, Passed: true, Score: 1,
					Checks: []CheckResult{{Name: "answer contains x", Kind: CheckAnswer, Passed: true}}})
			}
		}
	}
	for _, a := range arms {
		p.Arms = append(p.Arms, plan.PlanArm{Name: a})
	}
	p.Digest = p.ComputeDigest()
	return p, rs
}

func result(t *testing.T, rs []CellResult, id string) *CellResult {
	t.Helper()
	for i := range rs {
		if rs[i].Cell == id {
			return &rs[i]
		}
	}
	t.Fatalf("no result %s", id)
	return nil
}

func TestAuditQueueReasons(t *testing.T) {
	p, rs := auditPlan(4, []string{"none", "forced"}, 3)
	// Deterministic checks pass, the judge fails; and the reverse.
	r := result(t, rs, "c001/forced/2")
	r.Checks = append(r.Checks, CheckResult{Name: "rubric 0: explains why", Kind: CheckJudge, Passed: false})
	r.Passed = false
	r = result(t, rs, "c002/none/1")
	r.Checks = []CheckResult{{Name: "file out.txt exists", Kind: CheckFile, Passed: false}, {Name: "rubric 0: explains why", Kind: CheckJudge, Passed: true}}
	r.Passed = false
	// Both agree: not a disagreement, though c003/none is inconsistent.
	r = result(t, rs, "c003/none/3")
	r.Checks = []CheckResult{{Name: "file out.txt exists", Kind: CheckFile, Passed: false}, {Name: "rubric 0", Kind: CheckJudge, Passed: false}}
	r.Passed = false
	// Invalid and missing cells are never audited, and do not make their
	// condition inconsistent.
	result(t, rs, "c004/forced/1").Status = StatusInvalid
	result(t, rs, "c004/forced/2").Status = StatusMissing
	result(t, rs, "c004/forced/2").Passed = false

	q := AuditQueue(p, rs, p.Suite.Seed)
	got := map[string][]string{}
	var order []string
	for _, it := range q {
		got[it.ID] = it.Reasons
		order = append(order, it.Cell)
		if it.ID != AuditID(it.Case, it.Arm, it.Trial) || it.Cell != plan.CellID(it.Case, it.Arm, it.Trial) {
			t.Errorf("item %+v: id and cell disagree", it)
		}
	}
	want := map[string][]string{
		"c001:forced:1": {AuditInconsistent},
		"c001:forced:2": {AuditDisagreement, AuditInconsistent},
		"c001:forced:3": {AuditInconsistent},
		"c002:none:1":   {AuditDisagreement, AuditInconsistent},
		"c002:none:2":   {AuditInconsistent},
		"c002:none:3":   {AuditInconsistent},
		"c003:none:1":   {AuditInconsistent},
		"c003:none:2":   {AuditInconsistent},
		"c003:none:3":   {AuditInconsistent},
	}
	// 24 cells, 1 invalid, 1 missing, 9 flagged: 13 left, 2 sampled.
	var sampled []string
	for id, rs := range got {
		if slices.Equal(rs, []string{AuditSample}) {
			sampled = append(sampled, id)
			continue
		}
		if !reflect.DeepEqual(rs, want[id]) {
			t.Errorf("%s: reasons %v, want %v", id, rs, want[id])
		}
	}
	for id := range want {
		if _, ok := got[id]; !ok {
			t.Errorf("%s is not in the queue", id)
		}
	}
	if len(sampled) != 2 {
		t.Errorf("sampled %v, want 2 of the 13 remaining valid cells", sampled)
	}
	for _, id := range sampled {
		if strings.HasPrefix(id, "c004:forced:1") || strings.HasPrefix(id, "c004:forced:2") {
			t.Errorf("sampled the invalid or missing cell %s", id)
		}
	}
	if !slices.IsSortedFunc(order, func(a, b string) int {
		return slices.IndexFunc(p.Cells, func(c plan.Cell) bool { return c.ID == a }) - slices.IndexFunc(p.Cells, func(c plan.Cell) bool { return c.ID == b })
	}) {
		t.Errorf("queue not in plan order: %v", order)
	}
	for _, it := range q {
		if it.ID == "c001:forced:2" && (!strings.Contains(it.Detail, "deterministic checks passed, the judge failed rubric 0: explains why") ||
			!strings.Contains(it.Detail, "2 of 3 trials of c001 in forced passed") || !slices.Equal(it.Failed, []string{"rubric 0: explains why"})) {
			t.Errorf("c001:forced:2: %+v", it)
		}
		if it.ID == "c002:none:1" && !strings.Contains(it.Detail, "the judge passed, deterministic checks failed file out.txt exists") {
			t.Errorf("c002:none:1: %+v", it)
		}
	}
}

// The sample is 10% (rounded up) of the remaining valid cells, the same
// for the same seed whatever the results' order, another for another seed.
func TestAuditQueueSample(t *testing.T) {
	p, rs := auditPlan(100, []string{"none", "forced"}, 1)
	ids := func(q []AuditItem) []string {
		var out []string
		for _, it := range q {
			if !slices.Equal(it.Reasons, []string{AuditSample}) {
				t.Errorf("%s: reasons %v", it.ID, it.Reasons)
			}
			out = append(out, it.ID)
		}
		return out
	}
	a := ids(AuditQueue(p, rs, 7))
	if len(a) != 20 {
		t.Fatalf("sampled %d of 200 cells, want 20", len(a))
	}
	shuffled := slices.Clone(rs)
	slices.Reverse(shuffled)
	if b := ids(AuditQueue(p, shuffled, 7)); !slices.Equal(a, b) {
		t.Errorf("the sample depends on the results' order:\n%v\n%v", a, b)
	}
	if c := ids(AuditQueue(p, rs, 8)); slices.Equal(a, c) {
		t.Errorf("seeds 7 and 8 draw the same sample %v", a)
	}
	arms := map[string]int{}
	for _, id := range a {
		_, arm, _, _ := ParseAuditID(id)
		arms[arm]++
	}
	if arms["none"] == 0 || arms["forced"] == 0 {
		t.Errorf("the sample is not spread: %v", arms)
	}
	_, few := auditPlan(3, []string{"none"}, 1)
	if n := len(AuditQueue(p, few[:0], 7)); n != 0 {
		t.Errorf("no results, %d items", n)
	}
	p3, few := auditPlan(3, []string{"none"}, 1)
	if n := len(AuditQueue(p3, few, 7)); n != 1 {
		t.Errorf("3 cells: %d sampled, want 1", n)
	}
}

func TestParseAuditID(t *testing.T) {
	for id, want := range map[string][3]string{
		"a:none:1":       {"a", "none", "1"},
		"my.case:arm:12": {"my.case", "arm", "12"},
	} {
		c, a, tr, err := ParseAuditID(id)
		if err != nil || c != want[0] || a != want[1] || fmt.Sprint(tr) != want[2] {
			t.Errorf("%s: %q %q %d %v", id, c, a, tr, err)
		}
	}
	for _, id := range []string{"", "a", "a:b", "a:b:x", "a:b:0", ":b:1", "a::1", "a/b/1"} {
		if _, _, _, err := ParseAuditID(id); err == nil {
			t.Errorf("%q parsed", id)
		}
	}
}

// treeSums is the SHA-256 of every file under dir but the ledger.
func treeSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == FileAuditLedger {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		rel, _ := filepath.Rel(dir, p)
		sums[rel] = hex.EncodeToString(h[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// Decisions are appended, one JSON line each, and change no stored file;
// a bad ID, decision or rationale appends nothing.
func TestAppendAudit(t *testing.T) {
	p, rs := auditPlan(2, []string{"none", "forced"}, 2)
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "plan.json"), p.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		dir := filepath.Join(out, "store", "rollouts", r.Rollout.Encoded())
		if err := os.MkdirAll(filepath.Join(dir, "workspace"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string]string{"rollout.json": `{"cell":"` + r.Cell + `"}`, "answer.txt": "answer", "workspace/out.txt": "x"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(out, "store", "grades"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "store", "grades", "g.json"), []byte(`{"passed":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	q := AuditQueue(p, rs, p.Suite.Seed)
	if err := WriteAuditQueue(out, q); err != nil {
		t.Fatal(err)
	}
	before := treeSums(t, out)

	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, d := range []AuditDecision{
		{ID: "c001:forced:2", Decision: AuditAccept, Rationale: "Evidence checked", Time: when},
		{ID: "c001:forced:2", Decision: AuditReject, Rationale: "  the judge missed the diff  "},
	} {
		if err := AppendAudit(out, p, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []AuditDecision{
		{ID: "c009:forced:1", Decision: AuditAccept, Rationale: "x"},
		{ID: "c001:forced:3", Decision: AuditAccept, Rationale: "x"},
		{ID: "c001:automatic:1", Decision: AuditAccept, Rationale: "x"},
		{ID: "c001/forced/1", Decision: AuditAccept, Rationale: "x"},
		{ID: "c001:forced:1", Decision: "maybe", Rationale: "x"},
		{ID: "c001:forced:1", Decision: AuditReject, Rationale: " \n"},
	} {
		if err := AppendAudit(out, p, bad); err == nil {
			t.Errorf("appended %+v", bad)
		} else {
			t.Logf("%+v: %v", bad, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, FileAuditLedger))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 || lines[0] != `{"id":"c001:forced:2","decision":"accept","rationale":"Evidence checked","time":"2026-01-02T03:04:05Z"}` {
		t.Errorf("ledger:\n%s", b)
	}
	ds, err := ReadAuditLedger(out)
	if err != nil || len(ds) != 2 || ds[1].Decision != AuditReject || ds[1].Rationale != "the judge missed the diff" || ds[1].Time.IsZero() {
		t.Errorf("ledger read back: %+v, %v", ds, err)
	}
	if after := treeSums(t, out); !reflect.DeepEqual(before, after) {
		t.Errorf("auditing changed stored files:\nbefore %v\nafter  %v", before, after)
	}

	// The queue file is deterministic and reads back.
	first, _ := os.ReadFile(filepath.Join(out, FileAuditQueue))
	if err := WriteAuditQueue(out, AuditQueue(p, rs, p.Suite.Seed)); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(filepath.Join(out, FileAuditQueue))
	if string(first) != string(second) {
		t.Error("the audit queue's bytes differ for the same results")
	}
	back, ok, err := ReadAuditQueue(out)
	if err != nil || !ok || !reflect.DeepEqual(back, q) {
		t.Errorf("queue read back: %+v, %v, %v", back, ok, err)
	}
}
