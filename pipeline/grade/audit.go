package grade

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// Files of the human audit in a run folder.
const (
	// FileAuditQueue lists the cells a person should audit.
	FileAuditQueue = "audit-queue.json"
	// FileAuditLedger is the append-only JSONL ledger of audit decisions.
	FileAuditLedger = "audit.jsonl"
)

// Why a cell is in the audit queue.
const (
	// AuditDisagreement: the deterministic checks and the judge disagree.
	AuditDisagreement = "objective-judge-disagreement"
	// AuditInconsistent: the trials of the cell's case × arm disagree.
	AuditInconsistent = "inconsistent-condition"
	// AuditSample: drawn in the seeded 10% sample of the other valid cells.
	AuditSample = "sample"
)

// Audit decisions.
const (
	AuditAccept = "accept"
	AuditReject = "reject"
)

// AuditItem is one cell a person should audit, and why.
type AuditItem struct {
	// ID is "case:arm:trial", as `skillgate audit --id` takes it.
	ID    string `json:"id"`
	Cell  string `json:"cell"`
	Case  string `json:"case"`
	Arm   string `json:"arm"`
	Trial int    `json:"trial"`
	// Reasons are AuditDisagreement, AuditInconsistent or AuditSample.
	Reasons []string `json:"reasons"`
	// Detail says what disagrees, for people.
	Detail  string        `json:"detail,omitempty"`
	Status  string        `json:"status"`
	Passed  bool          `json:"passed"`
	Failed  []string      `json:"failed,omitempty"`
	Rollout digest.Digest `json:"rollout"`
}

// AuditDecision is one line of the audit ledger: a person's decision on
// one cell. It supplements the stored results; it never changes them.
type AuditDecision struct {
	ID        string    `json:"id"`
	Decision  string    `json:"decision"`
	Rationale string    `json:"rationale"`
	Time      time.Time `json:"time"`
}

// AuditID names a cell in the audit queue and ledger: "case:arm:trial".
func AuditID(caseID, arm string, trial int) string {
	return caseID + ":" + arm + ":" + strconv.Itoa(trial)
}

// ParseAuditID splits "case:arm:trial".
func ParseAuditID(id string) (caseID, arm string, trial int, err error) {
	rest, t, ok := cutLast(id, ":")
	if ok {
		caseID, arm, ok = cutLast(rest, ":")
	}
	if ok {
		trial, err = strconv.Atoi(t)
	}
	if !ok || err != nil || caseID == "" || arm == "" || trial < 1 {
		return "", "", 0, fmt.Errorf("audit id %q is not CASE:ARM:TRIAL", id)
	}
	return caseID, arm, trial, nil
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// AuditQueue lists the cells a person should audit, in plan order: every
// valid cell whose deterministic checks and judge checks disagree (one
// side passed, the other failed); every valid cell of a case × arm whose
// valid trials do not all agree on Passed; and a deterministic sample of
// 10% (rounded up) of the other valid cells, drawn by seed (the suite's
// seed), the same for the same results. A cell is listed once, with all
// its reasons.
func AuditQueue(p *plan.Plan, results []CellResult, seed int64) []AuditItem {
	order := make(map[string]int, len(p.Cells))
	for i, c := range p.Cells {
		order[c.ID] = i
	}
	var valid []CellResult
	for _, r := range results {
		if _, ok := order[r.Cell]; ok && r.Valid() {
			valid = append(valid, r)
		}
	}
	slices.SortStableFunc(valid, func(a, b CellResult) int { return order[a.Cell] - order[b.Cell] })

	reasons := map[string][]string{}
	details := map[string][]string{}
	for _, r := range valid {
		if d, ok := disagreement(r); ok {
			reasons[r.Cell] = append(reasons[r.Cell], AuditDisagreement)
			details[r.Cell] = append(details[r.Cell], d)
		}
	}
	type condition struct{ caseID, arm string }
	passes := map[condition][]bool{}
	for _, r := range valid {
		k := condition{r.Case, r.Arm}
		passes[k] = append(passes[k], r.Passed)
	}
	for _, r := range valid {
		ps := passes[condition{r.Case, r.Arm}]
		if slices.Contains(ps, true) && slices.Contains(ps, false) {
			n := 0
			for _, p := range ps {
				if p {
					n++
				}
			}
			reasons[r.Cell] = append(reasons[r.Cell], AuditInconsistent)
			details[r.Cell] = append(details[r.Cell], fmt.Sprintf("%d of %d trials of %s in %s passed", n, len(ps), r.Case, r.Arm))
		}
	}
	var rest []CellResult
	for _, r := range valid {
		if len(reasons[r.Cell]) == 0 {
			rest = append(rest, r)
		}
	}
	if k := (len(rest)*p.Suite.Audit.SamplePercent + 99) / 100; k > 0 {
		drawn := slices.Clone(rest)
		slices.SortStableFunc(drawn, func(a, b CellResult) int {
			ka, kb := sampleKey(seed, a.Cell), sampleKey(seed, b.Cell)
			switch {
			case ka < kb:
				return -1
			case ka > kb:
				return 1
			}
			return strings.Compare(a.Cell, b.Cell)
		})
		for _, r := range drawn[:k] {
			reasons[r.Cell] = []string{AuditSample}
		}
	}

	items := []AuditItem{}
	for _, r := range valid {
		rs := reasons[r.Cell]
		if len(rs) == 0 {
			continue
		}
		it := AuditItem{ID: AuditID(r.Case, r.Arm, r.Trial), Cell: r.Cell, Case: r.Case, Arm: r.Arm, Trial: r.Trial,
			Reasons: rs, Detail: strings.Join(details[r.Cell], "; "), Status: r.Status, Passed: r.Passed, Rollout: r.Rollout}
		for _, ch := range r.Checks {
			if !ch.Passed {
				it.Failed = append(it.Failed, ch.Name)
			}
		}
		items = append(items, it)
	}
	return items
}

// disagreement reports whether a cell's deterministic checks and its judge
// disagree: the judge's dispute when it recorded one (with what the
// adjudicator decided), else all checks of one kind passed while one of the
// other failed.
func disagreement(r CellResult) (string, bool) {
	if r.Judge != nil && r.Judge.Dispute != nil {
		d := r.Judge.Dispute
		if d.Kind != DisputeDisagreement {
			return "", false
		}
		return d.Disagreed + "; adjudicator: " + d.Decision(), true
	}
	var objective, judge []CheckResult
	for _, ch := range r.Checks {
		if ch.Kind == CheckJudge {
			judge = append(judge, ch)
		} else {
			objective = append(objective, ch)
		}
	}
	if len(objective) == 0 || len(judge) == 0 {
		return "", false
	}
	objPassed, judgePassed := allPassed(objective), allPassed(judge)
	if objPassed && r.Status == StatusCompleted {
		// The rubric may pass with a criterion failed (rubricPass below 1):
		// the cell's outcome says whether it did.
		judgePassed = r.Passed
	}
	switch {
	case objPassed && !judgePassed:
		return "deterministic checks passed, the judge failed " + strings.Join(failedNames(judge), ", "), true
	case !objPassed && judgePassed:
		return "the judge passed, deterministic checks failed " + strings.Join(failedNames(objective), ", "), true
	}
	return "", false
}

func allPassed(cs []CheckResult) bool {
	for _, c := range cs {
		if !c.Passed {
			return false
		}
	}
	return true
}

func failedNames(cs []CheckResult) []string {
	var out []string
	for _, c := range cs {
		if !c.Passed {
			out = append(out, c.Name)
		}
	}
	return out
}

// sampleKey orders cells for the sample: a hash of the seed and the cell.
func sampleKey(seed int64, cell string) uint64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seed))
	h := sha256.New()
	h.Write(b[:])
	h.Write([]byte(cell))
	return binary.BigEndian.Uint64(h.Sum(nil))
}

// WriteAuditQueue writes the audit queue into the run folder as
// audit-queue.json, atomically; the same items give the same bytes.
func WriteAuditQueue(out string, items []AuditItem) error {
	if items == nil {
		items = []AuditItem{}
	}
	b, err := json.MarshalIndent(items, "", "  ")
	if err != nil {
		return fmt.Errorf("write audit queue: %w", err)
	}
	return pipeline.WriteFile(filepath.Join(out, FileAuditQueue), append(b, '\n'))
}

// ReadAuditQueue reads the run folder's audit-queue.json; ok is false
// when there is none.
func ReadAuditQueue(out string) (items []AuditItem, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(out, FileAuditQueue))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read audit queue: %w", err)
	}
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, false, fmt.Errorf("read audit queue %s: %w", filepath.Join(out, FileAuditQueue), err)
	}
	return items, true, nil
}

// AppendAudit appends one decision to the run folder's audit ledger
// (audit.jsonl), after checking that its ID names a cell of p, the run's
// plan, that the decision is accept or reject and that the
// rationale is not empty. A zero Time is now. The ledger only grows: no
// line and no stored result is ever changed.
func AppendAudit(out string, p *plan.Plan, d AuditDecision) error {
	if d.Decision != AuditAccept && d.Decision != AuditReject {
		return fmt.Errorf("audit decision %q: want %s or %s", d.Decision, AuditAccept, AuditReject)
	}
	d.Rationale = strings.TrimSpace(d.Rationale)
	if d.Rationale == "" {
		return fmt.Errorf("audit %s: the rationale is empty; say what evidence you checked", d.ID)
	}
	caseID, arm, trial, err := ParseAuditID(d.ID)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(p.Cells, func(c plan.Cell) bool { return c.Case == caseID && c.Arm == arm && c.Trial == trial }) {
		return fmt.Errorf("audit id %s: the plan of %s has no cell %s", d.ID, out, plan.CellID(caseID, arm, trial))
	}
	if d.Time.IsZero() {
		d.Time = time.Now().UTC().Round(time.Millisecond)
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("append audit: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(out, FileAuditLedger), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("append audit: %w", err)
	}
	// One write of one line: concurrent appends never interleave.
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append audit: %w", err)
	}
	return nil
}

// ReadAuditLedger reads every decision of the run folder's ledger, oldest
// first; a missing ledger has none.
func ReadAuditLedger(out string) ([]AuditDecision, error) {
	b, err := os.ReadFile(filepath.Join(out, FileAuditLedger))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read audit ledger: %w", err)
	}
	var ds []AuditDecision
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var d AuditDecision
		if err := json.Unmarshal(line, &d); err != nil {
			return nil, fmt.Errorf("read audit ledger %s line %d: %w", filepath.Join(out, FileAuditLedger), n, err)
		}
		ds = append(ds, d)
	}
	return ds, sc.Err()
}
