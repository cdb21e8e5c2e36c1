package store

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

// demoPlan is the demo suite's plan, compiled once: 90 cells, a rubric
// judge, fixtures and a skill.
var demoPlan = sync.OnceValues(func() (*plan.Plan, error) { return plan.CompileDir("../../suites/demo") })

func mergePlan(t *testing.T) *plan.Plan {
	t.Helper()
	p, err := demoPlan()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeRun lays out a run folder of p holding the given cells as a run
// would have stored them: the fixture snapshots, a rollout (one changed
// file, its answer) started at start, a grade and, for a rubric case, a
// packet and a judgement. tag varies the contents, as another run of the
// same cells on another machine would.
func fakeRun(t *testing.T, p *plan.Plan, dir string, cells []plan.Cell, tag string, start time.Time) *Store {
	t.Helper()
	st, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FilePlan), p.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := st.PinFixtures(p, "../../suites/demo", cells); err != nil {
		t.Fatal(err)
	}
	cases, arms := map[string]plan.PlanCase{}, map[string]plan.PlanArm{}
	for _, pc := range p.Cases {
		cases[pc.ID] = pc
	}
	for _, a := range p.Arms {
		arms[a.Name] = a
	}
	for i, c := range cells {
		if _, ok, _ := st.Rollout(c.Rollout); ok {
			continue
		}
		pc, arm := cases[c.Case], arms[c.Arm]
		staged, err := st.Stage()
		if err != nil {
			t.Fatal(err)
		}
		content := []byte("- an entry " + tag + "\n")
		blob := digest.FromBytes(content)
		if err := os.MkdirAll(filepath.Join(staged, DirFiles), 0o755); err != nil {
			t.Fatal(err)
		}
		answer := "I added an entry (" + tag + ")."
		for name, b := range map[string][]byte{filepath.Join(DirFiles, blob.Encoded()): content, FileAnswer: []byte(answer), FileStdout: []byte(answer), FileStderr: nil} {
			if err := os.WriteFile(filepath.Join(staged, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ro := &Rollout{Key: c.Rollout, Plan: p.Digest, Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Status: StatusCompleted,
			Answer: answer, StartedAt: start.Add(time.Duration(i) * time.Second),
			Inputs:  plan.RolloutInputs{Fixture: pc.FixtureDigest, Skills: []plan.InstalledSkill{}},
			Changes: []grade.FileChange{{Path: "CHANGELOG.md", Kind: ChangeModified, Digest: blob, Size: int64(len(content))}}}
		for _, k := range arm.Skills {
			ro.Inputs.Skills = append(ro.Inputs.Skills, plan.InstalledSkill{Name: p.Skills[k].Name, Key: k, Digest: p.Skills[k].Digest})
		}
		if err := st.Commit(staged, ro); err != nil {
			t.Fatal(err)
		}
		r := grade.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade,
			Status: StatusCompleted, Passed: true, Score: 1, Checks: []grade.CheckResult{{Name: "entry " + tag, Kind: grade.CheckFile, Passed: true}}}
		if err := st.PutGrade(r); err != nil {
			t.Fatal(err)
		}
		if len(pc.Rubric) > 0 {
			key := c.Grade.Encoded()
			if err := st.PutPacket(key, []byte(`{"task": "`+tag+`"}`)); err != nil {
				t.Fatal(err)
			}
			j := &Judgement{Key: key, Mode: "rubric", Judge: p.Judge.Digest, Cells: []string{c.ID}, Role: RoleJudge, Reply: "ok " + tag}
			if err := st.PutJudgement(j); err != nil {
				t.Fatal(err)
			}
		}
	}
	return st
}

// thirds splits the plan's cells in three by position.
func thirds(p *plan.Plan) [3][]plan.Cell {
	var out [3][]plan.Cell
	for i, c := range p.Cells {
		out[i%3] = append(out[i%3], c)
	}
	return out
}

func mustMerge(t *testing.T, out string, dirs ...string) *MergeRecord {
	t.Helper()
	rec, err := Merge(out, dirs)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestMergeUnionsShards: three folders each holding a third of the cells
// merge into one holding every record, byte for byte, with nothing to
// decide, and the merged folder gives every cell its result.
func TestMergeUnionsShards(t *testing.T) {
	p := mergePlan(t)
	base := t.TempDir()
	start := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	var dirs []string
	for i, cells := range thirds(p) {
		d := filepath.Join(base, "s"+string(rune('1'+i)))
		fakeRun(t, p, d, cells, "x", start)
		if err := WriteShard(d, ShardRecord{Plan: p.Digest, Count: 3, Shards: []int{i + 1}}); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	out := filepath.Join(base, "merged")
	rec := mustMerge(t, out, dirs...)
	if len(rec.Duplicates) != 0 || rec.Shard != nil {
		t.Errorf("duplicates %v, shard %v: want none", rec.Duplicates, rec.Shard)
	}
	if rec.Records[KindRollout] != len(p.Cells) || rec.Records[KindGrade] != len(p.Cells) {
		t.Errorf("records %v, want %d rollouts and grades", rec.Records, len(p.Cells))
	}
	if _, err := os.Stat(filepath.Join(out, FileShard)); err == nil {
		t.Error("a merge of every shard wrote a shard record")
	}
	results, err := Results(p, &Store{Dir: out})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Status != StatusCompleted || !r.Passed {
			t.Fatalf("merged result of %s: %s, want the stored grade", r.Cell, r.Status)
		}
	}
	for i, cells := range thirds(p) {
		for _, c := range cells[:3] {
			for _, rel := range []string{recordPath(KindGrade, c.Grade.Encoded()), filepath.Join(recordPath(KindRollout, c.Rollout.Encoded()), FileRollout)} {
				a, _ := os.ReadFile(filepath.Join(dirs[i], rel))
				b, err := os.ReadFile(filepath.Join(out, rel))
				if err != nil || string(a) != string(b) {
					t.Errorf("%s: merged copy differs from the shard's (%v)", rel, err)
				}
			}
		}
	}
	// Snapshots stay read-only, their digest intact.
	trees, _ := os.ReadDir(filepath.Join(out, DirTrees))
	if len(trees) == 0 {
		t.Fatal("no tree snapshot merged")
	}
	for _, tr := range trees {
		tree, err := plan.HashTree(filepath.Join(out, DirTrees, tr.Name()))
		if err != nil || tree.Digest.Encoded() != tr.Name() {
			t.Errorf("merged tree %s: digest %s (%v)", tr.Name(), tree.Digest, err)
		}
	}

	// Two of three shards: the merged folder says which it holds.
	rec = mustMerge(t, filepath.Join(base, "part"), dirs[2], dirs[0])
	if rec.Shard == nil || rec.Shard.Count != 3 || len(rec.Shard.Shards) != 2 || rec.Shard.Shards[0] != 1 || rec.Shard.Shards[1] != 3 {
		t.Errorf("shard of a merge of shards 3 and 1: %+v, want 1, 3 of 3", rec.Shard)
	}
	if got, ok, err := ReadShard(filepath.Join(base, "part"), p); err != nil || !ok || len(got.Shards) != 2 {
		t.Errorf("shard record of the partial merge: %+v %v %v", got, ok, err)
	}
	// A folder of the whole plan makes the merge whole, whatever else.
	whole := filepath.Join(base, "whole")
	fakeRun(t, p, whole, p.Cells[:1], "x", start)
	if rec := mustMerge(t, filepath.Join(base, "w"), dirs[0], whole); rec.Shard != nil {
		t.Errorf("a merge with an unsharded folder has shard %+v", rec.Shard)
	}
}

// TestMergeDuplicates: a key stored with different content in two folders
// keeps both; the rule chooses (valid over invalid, first started, lowest
// digest), whatever derives from a rollout follows the version it was made
// from, the other version is kept where the merge record says, and the
// inputs' order changes nothing in the merged store.
func TestMergeDuplicates(t *testing.T) {
	p := mergePlan(t)
	rubric := rubricCell(t, p)
	cells := []plan.Cell{p.Cells[0], p.Cells[1], p.Cells[2], rubric}
	base := t.TempDir()
	early := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	fakeRun(t, p, a, cells, "a", early)
	fakeRun(t, p, b, cells, "b", early.Add(time.Hour))
	// Cell 0: a's rollout is invalid: b's is chosen although a's started first.
	sa := &Store{Dir: a}
	if err := sa.Invalidate(cells[0].Rollout, "provider error", nil); err != nil {
		t.Fatal(err)
	}
	// Cell 2: both start at once: the lowest digest decides.
	for _, d := range []string{a, b} {
		st := &Store{Dir: d}
		ro, _, _ := st.Rollout(cells[2].Rollout)
		ro.StartedAt = early
		if err := st.putSealed(filepath.Join(st.RolloutDir(ro.Key), FileRollout), ro); err != nil {
			t.Fatal(err)
		}
	}
	// A judge failure for the rubric cell, in b: a judgement clears it.
	if err := (&Store{Dir: b}).PutJudgeFailure(&JudgeFailure{Key: rubric.Grade.Encoded(), Mode: "rubric", Role: RoleJudge, Judge: p.Judge.Digest, Name: rubric.ID, Cells: []string{rubric.ID}, Error: "timeout"}); err != nil {
		t.Fatal(err)
	}

	ab, ba := filepath.Join(base, "ab"), filepath.Join(base, "ba")
	rec := mustMerge(t, ab, a, b)
	mustMerge(t, ba, b, a)

	rules := map[string]map[string]string{} // kind → key → rule
	for _, d := range rec.Duplicates {
		if rules[d.Kind] == nil {
			rules[d.Kind] = map[string]string{}
		}
		rules[d.Kind][d.Key] = d.Rule
		for _, v := range d.SetAside {
			if _, err := os.Stat(filepath.Join(ab, v.Path)); err != nil {
				t.Errorf("%s %s: the set-aside version is not kept at %s: %v", d.Kind, short(d.Key), v.Path, err)
			}
		}
	}
	for _, tc := range []struct {
		kind string
		key  digest.Digest
		rule string
		from string // the input whose version is in the merged store
	}{
		{KindRollout, cells[0].Rollout, ruleValid, b},
		{KindRollout, cells[1].Rollout, ruleFirst, a},
		{KindRollout, cells[3].Rollout, ruleFirst, a},
		{KindGrade, cells[0].Grade, "follows rollout " + short(cells[0].Rollout.Encoded()) + ", whose version it was not made from", b},
		{KindGrade, cells[1].Grade, "", a},
		{KindJudgement, rubric.Grade, "", a},
		{KindPacket, rubric.Grade, "", a},
	} {
		got := rules[tc.kind][tc.key.Encoded()]
		if tc.rule != "" && got != tc.rule {
			t.Errorf("%s of %s: rule %q, want %q", tc.kind, short(tc.key.Encoded()), got, tc.rule)
		}
		rel := recordPath(tc.kind, tc.key.Encoded())
		if tc.kind == KindRollout {
			rel = filepath.Join(rel, FileRollout)
		}
		want, _ := os.ReadFile(filepath.Join(tc.from, rel))
		for _, out := range []string{ab, ba} {
			if got, err := os.ReadFile(filepath.Join(out, rel)); err != nil || string(got) != string(want) {
				t.Errorf("%s of %s in %s: not %s's version (%v)", tc.kind, short(tc.key.Encoded()), filepath.Base(out), filepath.Base(tc.from), err)
			}
		}
	}
	// The grade of the rubric cell follows its rollout (a's, first started).
	if rules[KindGrade][rubric.Grade.Encoded()] != "follows rollout "+short(rubric.Rollout.Encoded())+", whose version it was not made from" {
		t.Errorf("rubric grade's rule: %q", rules[KindGrade][rubric.Grade.Encoded()])
	}
	// Cell 2: equal starts, so the lowest digest.
	if r := rules[KindRollout][cells[2].Rollout.Encoded()]; r != ruleDigest {
		t.Errorf("rollout of equal starts: rule %q, want %q", r, ruleDigest)
	}
	if _, err := os.Stat(filepath.Join(ab, recordPath(KindJudgeFailure, rubric.Grade.Encoded()))); err == nil {
		t.Error("a judge failure was merged beside the judgement of its key")
	}
	// Either order gives the same merged store.
	sab, err := plan.HashTree(filepath.Join(ab, "store"))
	if err != nil {
		t.Fatal(err)
	}
	sba, err := plan.HashTree(filepath.Join(ba, "store"))
	if err != nil {
		t.Fatal(err)
	}
	if sab.Digest != sba.Digest {
		for f, e := range sab.Files {
			if sba.Files[f] != e {
				t.Errorf("merge a b and merge b a differ in %s", f)
			}
		}
	}
}

// TestMergeLedgers: the spend and audit ledgers are the union of the
// folders' lines, each once, in time order.
func TestMergeLedgers(t *testing.T) {
	p := mergePlan(t)
	base := t.TempDir()
	at := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	fakeRun(t, p, a, p.Cells[:1], "a", at)
	fakeRun(t, p, b, p.Cells[1:2], "b", at)
	line := func(e SpendEntry) string { raw, _ := json.Marshal(e); return string(raw) + "\n" }
	shared := SpendEntry{Time: at, Kind: SpendCell, ID: p.Cells[0].ID, Rollout: p.Cells[0].Rollout, USD: 0.5}
	late := SpendEntry{Time: at.Add(time.Minute), Kind: SpendJudge, ID: "k", USD: 0.01}
	early := SpendEntry{Time: at.Add(-time.Minute), Kind: SpendCell, ID: p.Cells[1].ID, Rollout: p.Cells[1].Rollout, USD: 0.25}
	os.WriteFile(filepath.Join(a, FileSpend), []byte(line(shared)+line(late)), 0o644)
	os.WriteFile(filepath.Join(b, FileSpend), []byte(line(shared)+line(early)), 0o644)
	d := grade.AuditDecision{ID: grade.AuditID(p.Cells[0].Case, p.Cells[0].Arm, p.Cells[0].Trial), Decision: "agree", Time: at}
	raw, _ := json.Marshal(d)
	os.WriteFile(filepath.Join(a, grade.FileAuditLedger), append(raw, '\n'), 0o644)
	os.WriteFile(filepath.Join(b, grade.FileAuditLedger), append(raw, '\n'), 0o644)

	out := filepath.Join(base, "m")
	rec := mustMerge(t, out, a, b)
	got, _ := os.ReadFile(filepath.Join(out, FileSpend))
	if want := line(early) + line(shared) + line(late); string(got) != want {
		t.Errorf("merged ledger:\n%s\nwant:\n%s", got, want)
	}
	if total, _ := FolderSpend(out); total != 0.76 {
		t.Errorf("merged spend %v, want 0.76", total)
	}
	audits, _ := os.ReadFile(filepath.Join(out, grade.FileAuditLedger))
	if strings.Count(string(audits), "\n") != 1 || rec.Spend != 3 || rec.Audits != 1 {
		t.Errorf("audit ledger %q, record spend %d audits %d", audits, rec.Spend, rec.Audits)
	}
}

// TestMergeRefuses: a folder of another plan, any record that fails its
// key, or a folder in use stops the merge with a message naming the folder
// and the record, and writes nothing.
func TestMergeRefuses(t *testing.T) {
	p := mergePlan(t)
	rubric := rubricCell(t, p)
	cell := p.Cells[0]
	base := t.TempDir()
	good := filepath.Join(base, "good")
	fakeRun(t, p, good, []plan.Cell{cell, rubric}, "g", time.Now())
	rolloutDir := filepath.Join("store", "rollouts", cell.Rollout.Encoded())
	editJSON := func(dir, rel string, edit func(map[string]any)) {
		var v map[string]any
		raw, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(raw, &v)
		edit(v)
		raw, _ = json.Marshal(v)
		os.WriteFile(filepath.Join(dir, rel), raw, 0o644)
		// Sealed again: what a careful forger does; the checks beyond the
		// seal still refuse it.
		if err := Reseal(filepath.Join(dir, rel)); err != nil {
			t.Fatal(err)
		}
	}
	blob := func(dir string) string {
		fs, _ := filepath.Glob(filepath.Join(dir, rolloutDir, DirFiles, "*"))
		return fs[0]
	}
	other := *p
	other.Digest = digest.FromString("another plan")
	for _, tc := range []struct {
		name  string
		spoil func(dir string)
		want  string
	}{
		{"rollout key", func(d string) {
			editJSON(d, filepath.Join(rolloutDir, FileRollout), func(v map[string]any) { v["key"] = digest.FromString("x").String() })
		}, "rollout " + short(cell.Rollout.Encoded()) + " (" + cell.ID + "): it records key sha256:"},
		{"grade edited by hand", func(d string) {
			f := filepath.Join(d, recordPath(KindGrade, cell.Grade.Encoded()))
			raw, _ := os.ReadFile(f)
			os.WriteFile(f, bytes.Replace(raw, []byte(`"passed": true`), []byte(`"passed": false`), 1), 0o644)
		}, "is not what its seal sha256:"},
		{"transcript", func(d string) { os.WriteFile(filepath.Join(d, rolloutDir, FileStdout), []byte("other"), 0o644) },
			"stdout.txt: its content has digest " + digest.FromString("other").String()},
		{"linked transcript", func(d string) {
			os.Remove(filepath.Join(d, rolloutDir, FileStderr))
			os.Symlink("/etc/passwd", filepath.Join(d, rolloutDir, FileStderr))
		}, rolloutDir + "/stderr.txt is a link (to /etc/passwd)"},
		{"changed file", func(d string) { os.WriteFile(blob(d), []byte("altered"), 0o644) },
			"files/" + filepath.Base(blob(good)) + ": its content has digest " + digest.FromString("altered").String() + ", not the one it is named by: altered or damaged"},
		{"missing file", func(d string) { os.Remove(blob(d)) }, "changed file CHANGELOG.md: its content files/"},
		{"answer", func(d string) { os.WriteFile(filepath.Join(d, rolloutDir, FileAnswer), []byte("other"), 0o644) },
			"answer.txt differs from the answer rollout.json records"},
		{"fixture", func(d string) {
			editJSON(d, filepath.Join(rolloutDir, FileRollout), func(v map[string]any) {
				v["inputs"].(map[string]any)["fixture"] = digest.FromString("x").String()
			})
		}, "it ran fixture " + digest.FromString("x").String() + "; its key's cell"},
		{"tree", func(d string) {
			trees, _ := filepath.Glob(filepath.Join(d, DirTrees, "*", "CHANGELOG.md"))
			os.Chmod(trees[0], 0o644)
			os.WriteFile(trees[0], []byte("altered"), 0o644)
		}, "its files have digest sha256:"},
		{"grade key", func(d string) {
			editJSON(d, recordPath(KindGrade, cell.Grade.Encoded()), func(v map[string]any) { v["grade"] = digest.FromString("x").String() })
		}, "grade " + short(cell.Grade.Encoded()) + " (" + cell.ID + "): it records grade key"},
		{"grade rollout", func(d string) {
			editJSON(d, recordPath(KindGrade, cell.Grade.Encoded()), func(v map[string]any) { v["rollout"] = digest.FromString("x").String() })
		}, "it grades rollout " + digest.FromString("x").String() + "; the plan's cells of this grade key run rollout " + cell.Rollout.String()},
		{"judgement cell", func(d string) {
			editJSON(d, recordPath(KindJudgement, rubric.Grade.Encoded()), func(v map[string]any) { v["cells"] = []string{cell.ID} })
		}, "its cells give key " + short(cell.Grade.Encoded()) + ", not the one it is stored under"},
		{"judgement judge", func(d string) {
			editJSON(d, recordPath(KindJudgement, rubric.Grade.Encoded()), func(v map[string]any) { v["judge"] = digest.FromString("j").String() })
		}, "judged by " + digest.FromString("j").String() + ", not the plan's judge"},
		{"packet", func(d string) {
			os.WriteFile(filepath.Join(d, recordPath(KindPacket, rubric.Grade.Encoded())), []byte("{"), 0o644)
		},
			"packet " + short(rubric.Grade.Encoded()) + ": not JSON"},
		{"spend", func(d string) {
			os.WriteFile(filepath.Join(d, FileSpend), []byte(`{"time":"2025-05-01T10:00:00Z","kind":"cell","id":"x","usd":-1}`+"\n"), 0o644)
		}, "spend ledger entry 1: amount -1: altered or damaged"},
		{"audit", func(d string) {
			os.WriteFile(filepath.Join(d, grade.FileAuditLedger), []byte(`{"id":"nope:none:1","decision":"agree"}`+"\n"), 0o644)
		}, "audit.jsonl:1: nope:none:1 names no cell of the plan"},
		{"store part", func(d string) { os.MkdirAll(filepath.Join(d, "store", "recordings"), 0o755) },
			"store/recordings is no part of a run folder's store"},
		{"record name", func(d string) { os.WriteFile(filepath.Join(d, DirGrades, "x.json"), []byte("{}"), 0o644) },
			"store/grades/x.json: not named by a key"},
		{"calibration", func(d string) {
			WriteCalibration(d, p, &verdict.Calibration{Checks: []verdict.CalibrationCheck{{Arm: "none", Check: "shell", Rollout: digest.FromString("c")}}})
		}, "calibration.json: check shell in arm none names rollout " + short(digest.FromString("c").Encoded()) + ", which the folder does not hold"},
		{"calibration edited", func(d string) {
			WriteCalibration(d, p, &verdict.Calibration{Checks: []verdict.CalibrationCheck{{Arm: "none", Check: "shell", Passed: false}}})
			b, _ := os.ReadFile(filepath.Join(d, FileCalibration))
			os.WriteFile(filepath.Join(d, FileCalibration), bytes.Replace(b, []byte(`"passed": false`), []byte(`"passed": true`), 1), 0o644)
		}, "calibration.json: its content (digest "},
		{"calibration unsealed", func(d string) {
			raw, _ := json.Marshal(struct {
				Plan digest.Digest `json:"plan"`
				verdict.Calibration
			}{p.Digest, verdict.Calibration{}})
			os.WriteFile(filepath.Join(d, FileCalibration), raw, 0o644)
		}, "calibration.json: it records no seal"},
		{"plan", func(d string) { os.WriteFile(filepath.Join(d, FilePlan), []byte("{}"), 0o644) }, "read plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "bad")
			if err := copyTestFolder(good, bad); err != nil {
				t.Fatal(err)
			}
			tc.spoil(bad)
			out := filepath.Join(t.TempDir(), "out")
			_, err := Merge(out, []string{good, bad})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("merge with a spoilt %s: %v\nwant %q", tc.name, err, tc.want)
			}
			if tc.name != "plan" && !strings.HasPrefix(err.Error(), "verify "+bad+": ") {
				t.Errorf("error %q does not name the folder first", err)
			}
			if _, serr := os.Stat(out); serr == nil {
				t.Errorf("a refused merge wrote %s", out)
			}
			if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 0 {
				t.Errorf("a refused merge left %v", ents)
			}
		})
	}

	// Folders that cannot be merged together, and outputs that cannot take them.
	otherPlan := filepath.Join(base, "other")
	os.MkdirAll(otherPlan, 0o755)
	q := *p
	q.Suite.Trials = 2
	if err := os.WriteFile(filepath.Join(otherPlan, FilePlan), sealed(&q).Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	three, four := filepath.Join(base, "three"), filepath.Join(base, "four")
	for d, n := range map[string]int{three: 3, four: 4} {
		fakeRun(t, p, d, p.Cells[:1], "g", time.Now())
		WriteShard(d, ShardRecord{Plan: p.Digest, Count: n, Shards: []int{1}})
	}
	full := filepath.Join(base, "full")
	os.MkdirAll(filepath.Join(full, "x"), 0o755)
	for _, tc := range []struct {
		name string
		out  string
		dirs []string
		want string
	}{
		{"other plan", filepath.Join(base, "o1"), []string{good, otherPlan}, otherPlan + " holds a run of plan " + q.Digest.String() + ", " + good + " of plan " + p.Digest.String() + ": merge only run folders of one plan"},
		{"counts", filepath.Join(base, "o2"), []string{three, four}, "holds shards of 3, " + four + " shards of 4"},
		{"not empty", full, []string{good}, full + " is not empty: merge into a new folder"},
		{"twice", filepath.Join(base, "o3"), []string{good, good + "/"}, "are the same folder"},
		{"output", good, []string{good}, "is both an input and the output"},
		{"no plan", filepath.Join(base, "o4"), []string{good, base}, base + ": no plan.json: is it a run folder?"},
		{"none", filepath.Join(base, "o5"), nil, "no run folder to merge"},
	} {
		if _, err := Merge(tc.out, tc.dirs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}

	// A folder a run holds is not merged until the run ends.
	f, err := os.OpenFile(filepath.Join(good, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(filepath.Join(base, "o6"), []string{good}); err == nil || !strings.Contains(err.Error(), "a skillgate run is using it") {
		t.Errorf("merge of a locked folder: %v", err)
	}
}

// copyTestFolder copies a run folder, keeping modes.
func copyTestFolder(src, dst string) error {
	return filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode().Perm())
	})
}

// sealed gives a changed plan its digest.
func sealed(p *plan.Plan) *plan.Plan {
	p.Digest = p.ComputeDigest()
	return p
}

// rubricCell is a cell the judge grades, none of the plan's first three.
func rubricCell(t *testing.T, p *plan.Plan) plan.Cell {
	t.Helper()
	for _, c := range p.Cells[3:] {
		for _, pc := range p.Cases {
			if pc.ID == c.Case && len(pc.Rubric) > 0 && c.Case != p.Cells[0].Case {
				return c
			}
		}
	}
	t.Fatal("the plan judges no cell")
	return plan.Cell{}
}
