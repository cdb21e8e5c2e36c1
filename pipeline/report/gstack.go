package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// DirGstackRuns is where gstack's contract keeps the raw transcripts:
// <out>/runs/TASK/ARM/TRIAL/, beside verdict.json.
const DirGstackRuns = "runs"

// gstackRunFiles are the raw files of a cell copied under runs/, by
// evidence key, with the name each gets there.
var gstackRunFiles = []struct{ key, name string }{
	{"transcript", "transcript.txt"},
	{"stderr", "stderr.txt"},
	{"answer", "answer.txt"},
}

// writeGstack writes what gstack's contract keeps beside verdict.json (which
// every run folder has): each cell's raw transcript, stderr and final answer
// under runs/TASK/ARM/TRIAL/, copied from the store, which stays the record.
// Without evidence (a report rebuilt from grades alone) there is nothing to
// copy.
func writeGstack(dir string, r *verdict.Report, ev *Evidence) error {
	if ev == nil {
		return nil
	}
	ids := make([]string, 0, len(ev.Cells))
	for id := range ev.Cells {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c := ev.Cells[id]
		if c.Case == "" || c.Arm == "" || c.Trial < 1 {
			continue // not a cell of the plan's cases and arms
		}
		cell := filepath.Join(dir, DirGstackRuns, c.Case, c.Arm, strconv.Itoa(c.Trial))
		for _, f := range gstackRunFiles {
			rel, ok := c.Files[f.key]
			if !ok {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("copy %s of cell %s: %w", f.key, id, err)
			}
			if err := pipeline.WriteFile(filepath.Join(cell, f.name), b); err != nil {
				return err
			}
		}
	}
	return nil
}
