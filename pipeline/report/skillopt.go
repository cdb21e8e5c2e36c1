package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/formats/skillopt"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/runfolder"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// SkillOpt's aggregate reports, in the run folder's skillopt/ folder: for
// each arm, PHASE.ARM.json, the evaluate report over the evaluate
// workspace's cases and, when the suite also runs the release workspace,
// the release report over both, as SkillOpt's skillopt:report writes them
// (schemaVersion 4).
const (
	DirSkillOpt = "skillopt"
	// storeTrees is where a run folder keeps the verified snapshots of the
	// folders its plan digested (runner/store's layout): the workspaces are
	// read from there, as they ran, never from the live suite.
	storeTrees           = runfolder.DirTrees
	skilloptReportSchema = 4
)

// skilloptNow is when a report is created; tests fix it.
var skilloptNow = time.Now

// SkillOptWorkspace is one exported workspace as a run holds it: its
// manifest and its cases by ID, in the workspace's own words.
type SkillOptWorkspace struct {
	Dir      string
	Manifest skillopt.Workspace
	Cases    map[string]skillopt.EvalCase
	Digests  map[string]string
	// Root is the folder holding its files, for the target skill's bytes.
	Root string
}

// writeSkillOpt writes SkillOpt's reports of every arm whose cells are all
// there; an arm with a missing cell has no report, as SkillOpt refuses one
// with missing results.
func writeSkillOpt(dir string, r *verdict.Report, ev *Evidence) error {
	if ev == nil {
		return nil
	}
	p := ev.Plan
	if p == nil {
		return fmt.Errorf("write SkillOpt reports: the evidence names no plan")
	}
	ws, partial, err := pinnedWorkspaces(dir, p)
	if err != nil {
		return err
	}
	if partial && !slices.ContainsFunc(ws, func(w SkillOptWorkspace) bool { return w.Manifest.Mode == skillopt.ModeEvaluate }) {
		return nil // the evaluate workspace's cells did not run here: no report is complete
	}
	reports, err := SkillOptReports(ws, r, ev, p.Suite.Seed)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(reports)) {
		if err := pipeline.WriteFile(filepath.Join(dir, DirSkillOpt, name), reports[name]); err != nil {
			return err
		}
	}
	return nil
}

// pinnedWorkspaces reads the workspaces the plan's cases came from out of
// the run folder's snapshots, in the order their cases appear; partial
// when one has none, since none of its cells ran here.
func pinnedWorkspaces(dir string, p *plan.Plan) (out []SkillOptWorkspace, partial bool, err error) {
	for _, c := range p.Cases {
		if c.CaseDir == "" || slices.ContainsFunc(out, func(w SkillOptWorkspace) bool { return w.Dir == c.CaseDir }) {
			continue
		}
		t, ok := p.CaseDirs[path.Clean(c.CaseDir)]
		if !ok {
			continue
		}
		root := filepath.Join(dir, filepath.FromSlash(storeTrees), t.Digest.Encoded())
		w, err := ReadSkillOptWorkspace(c.CaseDir, root)
		if errors.Is(err, fs.ErrNotExist) {
			partial = true // not rolled out here: no cell of it has a result
			continue
		}
		if err != nil {
			return nil, false, err
		}
		out = append(out, w)
	}
	return out, partial, nil
}

// ReadSkillOptWorkspace reads a workspace's manifest and cases from root.
func ReadSkillOptWorkspace(name, root string) (SkillOptWorkspace, error) {
	w := SkillOptWorkspace{Dir: name, Root: root, Cases: map[string]skillopt.EvalCase{}, Digests: map[string]string{}}
	b, err := os.ReadFile(filepath.Join(root, skillopt.FileManifest))
	if err != nil {
		return w, err
	}
	if err := json.Unmarshal(b, &w.Manifest); err != nil {
		return w, fmt.Errorf("read workspace %s: %s: %w", name, skillopt.FileManifest, err)
	}
	entries, err := os.ReadDir(filepath.Join(root, skillopt.DirData))
	if err != nil {
		return w, fmt.Errorf("read workspace %s: %w", name, err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, skillopt.DirData, e.Name()))
		if err != nil {
			return w, fmt.Errorf("read workspace %s: %w", name, err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			line = bytes.TrimSuffix(line, []byte("\r"))
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var c skillopt.EvalCase
			if err := json.Unmarshal(line, &c); err != nil {
				return w, fmt.Errorf("read workspace %s: %s: %w", name, e.Name(), err)
			}
			d, err := skillopt.CaseDigest(line)
			if err != nil {
				return w, fmt.Errorf("read workspace %s: %s: %w", name, e.Name(), err)
			}
			w.Cases[c.ID], w.Digests[c.ID] = c, d
		}
	}
	return w, nil
}

// SkillOptReports builds SkillOpt's reports, by file name, from the
// workspaces a run read and its report and evidence: for each complete arm
// an evaluate report (exactly one evaluate workspace) and, with a release
// workspace of the same identities beside it, a release report.
func SkillOptReports(ws []SkillOptWorkspace, r *verdict.Report, ev *Evidence, seed int64) (map[string][]byte, error) {
	var eval, rel *SkillOptWorkspace
	for i := range ws {
		switch ws[i].Manifest.Mode {
		case skillopt.ModeEvaluate:
			if eval != nil {
				return nil, fmt.Errorf("write skillopt reports: a report takes exactly one evaluate workspace, the run has %s and %s", eval.Dir, ws[i].Dir)
			}
			eval = &ws[i]
		case skillopt.ModeRelease:
			if rel != nil {
				return nil, fmt.Errorf("write skillopt reports: a release report takes exactly one release workspace, the run has %s and %s", rel.Dir, ws[i].Dir)
			}
			rel = &ws[i]
		}
	}
	if eval == nil {
		if rel != nil {
			return nil, fmt.Errorf("write skillopt release report: it needs the evaluate workspace beside release workspace %s, whose held-out evidence a release keeps (formats.skillopt.workspace)", rel.Dir)
		}
		return nil, nil // an optimize workspace has no report
	}
	phases := []struct {
		name string
		ws   []*SkillOptWorkspace
	}{{"evaluate", []*SkillOptWorkspace{eval}}}
	if rel != nil {
		if why := skilloptPairs(eval, rel); why != "" {
			return nil, fmt.Errorf("write skillopt release report: workspaces %s and %s: %s", eval.Dir, rel.Dir, why)
		}
		phases = append(phases, struct {
			name string
			ws   []*SkillOptWorkspace
		}{"release", []*SkillOptWorkspace{eval, rel}})
	}
	out := map[string][]byte{}
	for _, arm := range r.Arms {
		for _, ph := range phases {
			a, err := skilloptAggregate(ph.name, ph.ws, r, arm, ev, seed)
			if errors.Is(err, errIncomplete) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("write skillopt %s report of arm %s: %w", ph.name, arm.Name, err)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(a); err != nil {
				return nil, err
			}
			out[ph.name+"."+arm.Name+".json"] = buf.Bytes()
		}
	}
	return out, nil
}

// skilloptPairs says why two workspaces cannot make one release report:
// SkillOpt's checkWorkspaces.
func skilloptPairs(a, b *SkillOptWorkspace) string {
	ma, mb := a.Manifest, b.Manifest
	switch {
	case ma.TargetSkill != mb.TargetSkill:
		return "they target different skills"
	case !slices.Equal(slices.Sorted(slices.Values(ma.CompanionSkills)), slices.Sorted(slices.Values(mb.CompanionSkills))):
		return "they use different companion skills"
	case ma.OptimizationUnit != mb.OptimizationUnit:
		return "they use different optimization units"
	case ma.TargetReference != mb.TargetReference:
		return "they use different target references"
	}
	for _, s := range ma.Skills() {
		if ma.SkillRevisions[s] != mb.SkillRevisions[s] {
			return fmt.Sprintf("they use different %s revisions", s)
		}
	}
	return ""
}

// errIncomplete: an arm lacks a result, so it has no report.
var errIncomplete = errors.New("an arm's results are incomplete")
