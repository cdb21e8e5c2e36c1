package readback

import (
	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/verdict"
	"github.com/skillgate/skillgate/runner/store"
)

// MarkSpendCapped tells in r's verdict the cells the spend cap left unrun (the
// ledger's refusals) or cut from those missing or invalid for other reasons.
func MarkSpendCapped(out string, r *verdict.Report, results []grade.CellResult) error {
	refused, err := store.SpendRefusals(out)
	if err != nil {
		return err
	}
	verdict.MarkSpendCapped(&r.Verdict, results, refused)
	return nil
}
