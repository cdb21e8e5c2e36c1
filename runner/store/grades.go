package store

import (
	"fmt"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// GradePath is where the grade stored under key lives.
func (s *Store) GradePath(key digest.Digest) string {
	return filepath.Join(s.Dir, DirGrades, key.Encoded()+".json")
}

// Grade reads the cell result stored under a grade key.
func (s *Store) Grade(key digest.Digest) (*grade.CellResult, bool, error) {
	var r grade.CellResult
	file := s.GradePath(key)
	if ok, err := readSealed(file, &r); err != nil || !ok {
		return nil, false, err
	}
	if r.Grade != key {
		return nil, false, fmt.Errorf("read grade %s: it records grade key %s, not the one it is named by: altered or damaged", file, r.Grade)
	}
	return &r, true, nil
}

// PutGrade stores a cell result under its grade key, atomically.
func (s *Store) PutGrade(r grade.CellResult) error {
	if err := s.putSealed(s.GradePath(r.Grade), r); err != nil {
		return fmt.Errorf("store grade %s: %w", r.Cell, err)
	}
	return nil
}

// Results returns one CellResult per plan cell from the store alone: a
// stored grade, else an invalid rollout, else missing. It needs no Docker
// and no model. A folder holding a link out of it is refused, and every
// record read is verified against its seal.
func Results(p *plan.Plan, store *Store) ([]grade.CellResult, error) {
	if err := CheckLinks(store.Dir); err != nil {
		return nil, err
	}
	out := make([]grade.CellResult, len(p.Cells))
	for i, c := range p.Cells {
		r, err := storedResult(store, c)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

func storedResult(store *Store, c plan.Cell) (grade.CellResult, error) {
	base := grade.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade, Status: grade.StatusMissing, Checks: []grade.CheckResult{}}
	if g, ok, err := store.Grade(c.Grade); err != nil || ok {
		if ok {
			// A grade is shared by cells with equal keys: name this one.
			g.Cell, g.Case, g.Arm, g.Trial = c.ID, c.Case, c.Arm, c.Trial
			return *g, nil
		}
		return base, err
	}
	ro, ok, err := store.Rollout(c.Rollout)
	if err != nil || !ok {
		return base, err
	}
	if ro.Status == StatusInvalid {
		base.Status, base.Error = ro.Status, ro.Error
	}
	return base, nil
}
