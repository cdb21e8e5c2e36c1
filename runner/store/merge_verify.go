package store

// Merge, phase 3 (verify): a record is checked against its key and its
// plan before it may be chosen; a version that fails is never merged.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// verify checks one record of input i against its key and returns its
// version.
func (m *merger) verify(i int, kind, key string) (*mergeVersion, error) {
	in := m.inputs[i]
	src := filepath.Join(in.abs, recordPath(kind, key))
	k := digest.NewDigestFromEncoded(digest.SHA256, key)
	switch kind {
	case KindRollout:
		return m.verifyRollout(in, src, k)
	case KindTree:
		t, err := plan.HashTree(src)
		if err != nil {
			return nil, fmt.Errorf("tree %s: %w", short(key), err)
		}
		if t.Digest != k {
			return nil, fmt.Errorf("tree %s: its files have digest %s, not the one it is named by: altered or damaged", short(key), t.Digest)
		}
		return &mergeVersion{src: src, dir: true, digest: t.Digest, valid: true}, nil
	}
	b, err := readRegular(src)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, short(key), err)
	}
	v := &mergeVersion{src: src, digest: digest.FromBytes(b), valid: true}
	switch kind {
	case KindGrade:
		var r grade.CellResult
		if err := unseal(recordPath(kind, key), b, &r); err != nil {
			return nil, fmt.Errorf("grade %s: %w", short(key), err)
		}
		if r.Grade != k {
			return nil, fmt.Errorf("grade %s (%s): it records grade key %s, not the one it is named by: altered or damaged", short(key), r.Cell, r.Grade)
		}
		if want, ok := m.ix.grades[k]; ok && r.Rollout != want {
			return nil, fmt.Errorf("grade %s (%s): it grades rollout %s; the plan's cells of this grade key run rollout %s: altered or damaged", short(key), r.Cell, r.Rollout, want)
		}
		v.valid = r.Status != StatusInvalid || r.Judge != nil
		v.deps = []digest.Digest{r.Rollout}
	case KindJudgement:
		var j Judgement
		if err := unseal(recordPath(kind, key), b, &j); err != nil {
			return nil, fmt.Errorf("judgement %s: %w", short(key), err)
		}
		if j.Key != key {
			return nil, fmt.Errorf("judgement %s: it records key %s, not the one it is named by: altered or damaged", short(key), short(j.Key))
		}
		if err := m.verifyJudgement(&j); err != nil {
			return nil, fmt.Errorf("judgement %s (%s): %w", short(key), strings.Join(j.Cells, ", "), err)
		}
		v.valid = j.Error == ""
		v.deps = m.ix.deps[key]
	case KindPacket:
		if !json.Valid(b) {
			return nil, fmt.Errorf("packet %s: not JSON: altered or damaged", short(key))
		}
		v.deps = m.ix.deps[key]
	case KindJudgeFailure:
		var f JudgeFailure
		if err := unseal(recordPath(kind, key), b, &f); err != nil {
			return nil, fmt.Errorf("judge failure %s: %w", short(key), err)
		}
		if f.Key != key {
			return nil, fmt.Errorf("judge failure %s: it records key %s, not the one it is named by: altered or damaged", short(key), short(f.Key))
		}
		v.valid = false
		v.deps = m.ix.deps[key]
	}
	return v, nil
}

// verifyJudgement checks that a judgement under one of the plan's judge
// keys is of the cells the key names, by the plan's judge.
func (m *merger) verifyJudgement(j *Judgement) error {
	if !m.ix.judged[j.Key] {
		return nil // of another plan: only its own key is checked
	}
	pj := m.plan.Judge
	if pj == nil || j.Judge != pj.Digest {
		return fmt.Errorf("judged by %s, not the plan's judge: altered or damaged", j.Judge)
	}
	var grades []digest.Digest
	for _, id := range j.Cells {
		c, ok := m.ix.cells[id]
		if !ok {
			return fmt.Errorf("names cell %s, which the plan lacks: altered or damaged", id)
		}
		grades = append(grades, c.Grade)
	}
	var want digest.Digest
	switch {
	case j.Mode == "pairwise" && len(grades) == 2:
		want = grade.PairwiseKey(grades[0], grades[1], j.Judge, j.Position)
	case j.Mode != "pairwise" && len(grades) == 1 && j.Role == RoleAdjudicator:
		want = grade.AdjudicationKey(grades[0])
	case j.Mode != "pairwise" && len(grades) == 1:
		want = grades[0]
	default:
		return fmt.Errorf("a %s judgement of %d cells: altered or damaged", j.Mode, len(grades))
	}
	if want.Encoded() != j.Key {
		return fmt.Errorf("its cells give key %s, not the one it is stored under: altered or damaged", short(want.Encoded()))
	}
	return nil
}

// verifyRollout checks a stored rollout: its record names its key, every
// changed file is stored under its content's digest, the answer file is
// the answer, and, under a key of the plan, it ran the plan's trees.
func (m *merger) verifyRollout(in *mergeInput, dir string, key digest.Digest) (*mergeVersion, error) {
	name := "rollout " + short(key.Encoded())
	var r Rollout
	if _, err := readSealed(filepath.Join(dir, FileRollout), &r); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	name += " (" + r.Cell + ")"
	if r.Key != key {
		return nil, fmt.Errorf("%s: it records key %s, not the one it is named by: altered or damaged", name, r.Key)
	}
	if err := verifyRolloutFiles(dir, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t, err := plan.HashTree(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if cells := m.ix.rollouts[key]; len(cells) > 0 {
		if err := m.verifyInputs(&r, cells[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	in.held[key] = t.Digest
	in.started[key] = r.StartedAt
	return &mergeVersion{src: dir, dir: true, digest: t.Digest, valid: r.Status != StatusInvalid, started: r.StartedAt}, nil
}

// verifyInputs checks that a rollout under a key of cell c ran c's trees.
func (m *merger) verifyInputs(r *Rollout, c plan.Cell) error {
	pc, arm := m.ix.cases[c.Case], m.ix.arms[c.Arm]
	if r.Inputs.Fixture != "" && r.Inputs.Fixture != pc.FixtureDigest {
		return fmt.Errorf("it ran fixture %s; its key's cell %s has fixture %s: altered or damaged", r.Inputs.Fixture, c.ID, pc.FixtureDigest)
	}
	if r.Inputs.Skills == nil {
		return nil
	}
	var got, want []string
	for _, s := range r.Inputs.Skills {
		got = append(got, s.Digest.String())
	}
	for _, k := range arm.Skills {
		want = append(want, m.plan.Skills[k].Digest.String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("it ran skills %v; its key's cell %s installs %v: altered or damaged", got, c.ID, want)
	}
	return nil
}
