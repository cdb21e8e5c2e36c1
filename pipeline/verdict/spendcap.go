package verdict

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// SpendCutPrefix begins the error of a cell the spend cap cut: the gateway
// refused one of its model calls, so its session is not a measurement.
const SpendCutPrefix = "spend cap:"

// spendReasons are the verdict's counts of cells not run and invalid, which
// MarkSpendCapped splits.
var (
	notRunReason  = regexp.MustCompile(`^INCOMPLETE (\d+) cells not run$`)
	invalidReason = regexp.MustCompile(`^INVALID (\d+) cells$`)
)

// MarkSpendCapped says in the verdict which cells the spend cap left out:
// refused names the cells it did not start (the spend ledger's refusals, by
// cell ID), and a cell whose error begins with SpendCutPrefix was cut by it.
// They leave the counts of cells not run and invalid for reasons of their own,
// so a reader tells "not run (spend cap)" and "cut by the spend cap" from a
// cell not run for another reason or invalid through a fault. Such cells are
// missing evidence: the verdict is INCOMPLETE, and a run with a higher cap
// finishes it.
func MarkSpendCapped(v *Verdict, results []grade.CellResult, refused map[string]string) {
	var notRun, cut []string
	for _, r := range results {
		switch {
		case r.Status == grade.StatusMissing && refused[r.Cell] != "":
			notRun = append(notRun, r.Cell)
		case r.Status == grade.StatusInvalid && strings.HasPrefix(r.Error, SpendCutPrefix):
			cut = append(cut, r.Cell)
		}
	}
	if len(notRun)+len(cut) == 0 {
		return
	}
	var reasons []string
	for _, why := range v.Reasons {
		if m := notRunReason.FindStringSubmatch(why); m != nil && len(notRun) > 0 {
			why = lessCells(why, m[1], len(notRun), "INCOMPLETE %d cells not run")
		} else if m := invalidReason.FindStringSubmatch(why); m != nil && len(cut) > 0 {
			why = lessCells(why, m[1], len(cut), "INVALID %d cells")
		}
		if why != "" {
			reasons = append(reasons, why)
		}
	}
	if len(notRun) > 0 {
		reasons = append(reasons, fmt.Sprintf("INCOMPLETE %d cells not run (spend cap): %s", len(notRun), listCells(notRun)))
	}
	if len(cut) > 0 {
		reasons = append(reasons, fmt.Sprintf("INCOMPLETE %d cells cut by the spend cap: %s", len(cut), listCells(cut)))
	}
	v.Reasons = reasons
	if v.Verdict != VerdictIncomplete {
		v.Resumable = true
	}
	v.Verdict = VerdictIncomplete
	v.ExitCode = ExitCode(VerdictIncomplete)
}

// lessCells is a count reason with n of its cells taken out; "" when none is
// left.
func lessCells(why, count string, n int, format string) string {
	var total int
	fmt.Sscan(count, &total)
	if total-n <= 0 {
		return ""
	}
	return fmt.Sprintf(format, total-n)
}

// listCells names cells, the first notJudgedListed of them.
func listCells(cells []string) string {
	list := strings.Join(cells[:min(len(cells), notJudgedListed)], ", ")
	if len(cells) > notJudgedListed {
		list += fmt.Sprintf(" and %d more", len(cells)-notJudgedListed)
	}
	return list
}
