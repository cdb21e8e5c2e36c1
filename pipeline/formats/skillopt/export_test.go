package skillopt

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// exportManifest computes workspace.json for the workspace folder dir the
// way SkillOpt's exporter does: every candidate file but the mutable ones
// immutable, companions immutable, each skill's revision, every case's
// digest and the case-set digest. Tests use it to build workspaces and to
// export one again after an edit.
func exportManifest(t *testing.T, dir, mode string, mutable []string) []byte {
	t.Helper()
	w := Workspace{SchemaVersion: manifestSchema, Mode: mode, OptimizationUnit: "root-router",
		CompanionSkills: []string{}, MutablePaths: append([]string{}, mutable...), ImmutablePaths: []string{},
		ImmutableDigests: map[string]string{}, SkillRevisions: map[string]string{}, Cases: []CaseRecord{}}
	targets, err := os.ReadDir(filepath.Join(dir, DirCandidate))
	if err != nil || len(targets) != 1 {
		t.Fatalf("export %s: want one candidate skill: %v", dir, err)
	}
	w.TargetSkill = targets[0].Name()
	if comps, err := os.ReadDir(filepath.Join(dir, DirCompanions)); err == nil {
		for _, c := range comps {
			w.CompanionSkills = append(w.CompanionSkills, c.Name())
		}
	}
	for _, s := range w.Skills() {
		sd := w.SkillDir(s)
		files, err := regularFiles(filepath.Join(dir, sd))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			p := sd + "/" + f
			if slices.Contains(mutable, p) {
				continue
			}
			d, err := fileDigest(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			w.ImmutablePaths = append(w.ImmutablePaths, p)
			w.ImmutableDigests[p] = d
		}
		rev, err := TreeRevision(filepath.Join(dir, sd))
		if err != nil {
			t.Fatal(err)
		}
		w.SkillRevisions[s] = rev
	}
	slices.Sort(w.ImmutablePaths)
	names, err := regularFiles(filepath.Join(dir, DirData))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, DirData, n))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			var c EvalCase
			if err := json.Unmarshal([]byte(line), &c); err != nil {
				t.Fatalf("export %s: %s: %v", dir, n, err)
			}
			d, err := CaseDigest([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			w.Cases = append(w.Cases, CaseRecord{ID: c.ID, Digest: d})
		}
	}
	w.CaseSetDigest = CaseSetDigest(w.Cases)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(w); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// example is the example suite's folder.
const example = "../../../suites/skillopt-example"

// TestExampleManifests keeps the example's workspace.json files those an
// export of its workspaces writes (UPDATE_GOLDEN=1 writes them).
func TestExampleManifests(t *testing.T) {
	for _, mode := range []string{ModeEvaluate, ModeRelease} {
		dir := filepath.Join(example, ".skillopt", "changelog", mode)
		want := exportManifest(t, dir, mode, nil)
		p := filepath.Join(dir, FileManifest)
		if os.Getenv("UPDATE_GOLDEN") != "" {
			if err := os.WriteFile(p, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what an export of its workspace writes; UPDATE_GOLDEN=1 writes it", p)
		}
	}
}

// ExportManifest is exportManifest for the package's external tests.
var ExportManifest = exportManifest
