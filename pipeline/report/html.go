package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"sort"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

//go:embed html.tmpl
var reportHTMLTemplate string

var reportHTML = template.Must(template.New("report.html").Parse(reportHTMLTemplate))

// htmlView is what html.tmpl shows, every figure already formatted.
type htmlView struct {
	Suite        string
	Verdict      string
	VerdictClass string
	ExitCode     int
	StandIn      string
	Reasons      []string
	Warnings     []string
	Findings     []htmlFinding
	WarnFindings []htmlFinding
	Identity     []htmlField
	Arms         []htmlArm
	Chart        *htmlChart
	Cost         htmlCost
	ArmNames     []htmlArmName
	// CaseChunks are the grid's rows in chunks, each its own table that the browser lays
	// out only when it scrolls near (content-visibility), so a run of thousands of cells
	// opens as fast as a small one.
	CaseChunks []htmlCaseChunk
	// ArmWidth is the width in pixels of an arm's column, for the widest trial count.
	ArmWidth    int
	Pairwise    []htmlPairGroup
	Disputes    *htmlDisputes
	Policy      string
	Rules       []htmlRule
	RulesFailed int
	// NoiseFloor says what the replicate arms measured, a line each.
	NoiseFloor []string
	// Portability is the table of a suite on several agents.
	Portability *htmlPortability
	Glossary    []htmlTerm
	// Evidence holds one JSON block per case (its cells' evidence), which the page's
	// script parses only when one of its cells, or its comparison, is opened.
	Evidence []htmlEvidence
	// Sequential says what sequential stopping decided, a line each.
	Sequential []string
	// ReuseSentinels says run --reuse's drift check, a line per group.
	ReuseSentinels []string
}

// htmlFinding is one reason of the verdict as a sentence, with links to the
// cells behind it.
type htmlFinding struct {
	Reason, Text, Rule string
	Cells              []htmlCellLink
	More               int
	// NotFailing: a reason that fails nothing (Verdict.NotFailing).
	NotFailing bool
}

type htmlCellLink struct{ ID, Class, Href string }

type htmlTerm struct{ Name, Label, Direction, Text string }

type htmlEvidence struct {
	Case string
	JSON template.JS
}

type htmlCaseChunk struct {
	First bool
	Cases []htmlCase
	// Height is the chunk's estimated height in pixels until it is laid out.
	Height int
}

// gridChunkRows is the number of cases per chunk of the grid.
const gridChunkRows = 40

// htmlDisputes are the disputed answers and who adjudicated them.
type htmlDisputes struct {
	Enabled     bool
	Adjudicator string
	Rows        []htmlDispute
}

type htmlDispute struct {
	Cell, Disagreed, Decision, Failed string
	Passed                            bool
}

type htmlField struct {
	Label, Value, Title string
	Mono                bool
}

type htmlArm struct {
	Name, Class, Skills, Activation, Evidence string
	Cells                                     int
	Statuses                                  string
	Pass                                      string
	PassCI                                    string
}

type htmlArmName struct{ Name, Class string }

type htmlChart struct {
	Width, Height int
	PlotLeft      int
	PlotRight     int
	AxisY         int
	Ticks         []htmlTick
	Groups        []htmlGroup
}

type htmlTick struct {
	X     string
	Label string
}

type htmlGroup struct {
	Label, Name string
	Y, BandY    int
	BandH       int
	Rows        []htmlPoint
}

type htmlPoint struct {
	Arm, Class  string
	Y, TextY    int
	CapTop      int
	CapBottom   int
	HasValue    bool
	HasCI       bool
	X, Lo, Hi   string
	Text, Title string
}

type htmlCost struct {
	Columns []string
	Base    string
	HasUSD  bool
	Rows    []htmlCostRow
}

type htmlCostRow struct {
	Arm, Class string
	Cells      []htmlCostCell
}

type htmlCostCell struct {
	Text, Ratio, Title string
	Absent             bool
}

type htmlCase struct {
	ID, Description, Split, Kind string
	Safety                       bool
	Cells                        []htmlGridCell
	CompareHref                  string
}

type htmlGridCell struct {
	Trials  []htmlTrial
	Summary string
	Empty   bool
}

type htmlTrial struct {
	Symbol, Class, Title string
	Href, DiffHref       string
}

type htmlRule struct {
	Rule, Severity, Detail string
	// Inference is the rule's paired inference, said in one line.
	Inference                string
	Met                      bool
	NotMeasured              bool
	Reasons, Flags, Warnings []string
}

type htmlPairGroup struct {
	Candidate, Baseline           string
	CandidateClass, BaselineClass string
	Rows                          []htmlPairRow
	Wins, Ties, Losses            int
}

type htmlPairRow struct {
	Case               string
	Trials             []htmlTrial
	Wins, Ties, Losses int
}

var verdictClasses = map[string]string{
	verdict.VerdictPass:        "pass",
	verdict.VerdictFail:        "fail",
	verdict.VerdictIncomplete:  "incomplete",
	verdict.VerdictCalibration: "calibration",
}

func armClass(i int) string { return fmt.Sprintf("arm%d", i%6) }

func renderReportHTML(r *verdict.Report) ([]byte, error) { return renderReportHTMLWith(r, nil) }

// findingCells caps the cell links a finding shows; the rest is counted.
const findingCells = 12

func renderReportHTMLWith(r *verdict.Report, ev *Evidence) ([]byte, error) {
	v := htmlView{
		Suite:          r.Suite,
		Verdict:        r.Verdict.Verdict,
		VerdictClass:   verdictClasses[r.Verdict.Verdict],
		ExitCode:       r.Verdict.ExitCode,
		StandIn:        r.StandIn,
		Reasons:        r.Verdict.Reasons,
		Warnings:       r.Verdict.Warnings,
		Policy:         r.Policy,
		Sequential:     r.Sequential.Lines(),
		ReuseSentinels: r.ReuseSentinels.Lines(),
	}
	if v.VerdictClass == "" {
		v.VerdictClass = "incomplete"
	}

	v.addIdentity(r)

	armIndex := map[string]int{}
	for i, name := range reportArmNames(r) {
		armIndex[name] = i
		v.ArmNames = append(v.ArmNames, htmlArmName{name, armClass(i)})
	}

	for i, a := range r.Arms {
		ha := htmlArm{
			Name: a.Name, Class: armClass(i), Activation: a.Activation,
			Evidence: orAbsent(a.Evidence), Cells: a.Cells, Skills: "no skill",
			Statuses: statusText(a.Statuses), Pass: absentMark,
		}
		if len(a.Skills) > 0 {
			ha.Skills = strings.Join(a.Skills, ", ")
		}
		if m, ok := a.Metrics["taskSuccess"]; ok {
			ha.Pass = fmtPct(m.Value)
			ha.PassCI = strings.TrimSpace(ciText(m) + fmt.Sprintf(" n=%d", m.Samples))
		}
		v.Arms = append(v.Arms, ha)
	}

	v.Chart = buildChart(r)
	v.Cost = buildCost(r)
	v.Findings, v.WarnFindings = findingsView(r)
	v.Glossary = glossary(r)
	if err := v.addEvidence(r, ev); err != nil {
		return nil, err
	}

	v.addCases(r)

	if nf := r.Verdict.NoiseFloor; nf != nil {
		v.NoiseFloor = verdict.NoiseFloorLines(nf)
	}
	v.Portability = portabilityHTML(r.Portability)
	v.addRules(r)
	v.addPairwise(r, armIndex)
	v.addDisputes(r)

	var b bytes.Buffer
	if err := reportHTML.Execute(&b, v); err != nil {
		return nil, err
	}
	return withCSP(b.Bytes()), nil
}

// addIdentity fills the identity panel: suite, plan, agent, model, judge, policy, trials.
func (v *htmlView) addIdentity(r *verdict.Report) {
	cells := 0
	for _, a := range r.Arms {
		cells += a.Cells
	}
	agent := r.Agent.Kind
	if r.Agent.Provider != "" {
		agent += " via " + r.Agent.Provider
	}
	v.Identity = []htmlField{
		{Label: "Suite", Value: r.Suite},
		{Label: "Plan", Value: shortDigest(r.Plan), Title: string(r.Plan), Mono: true},
		{Label: "Agent", Value: agent, Title: string(r.Agent.Digest)},
		{Label: "Model", Value: orAbsent(r.Agent.Model), Mono: true},
		{Label: "Image", Value: orAbsent(r.Agent.Image), Mono: true},
		{Label: "Judge", Value: judgeText(r.Judge)},
		{Label: "Policy", Value: orAbsent(r.Policy), Mono: true},
		{Label: "Trials", Value: fmt.Sprintf("%d per case × arm · %d cases · %d cells", r.Trials, len(r.Cases), cells)},
		{Label: "Observed", Value: strings.Join(observedLine(r, func(s string) string { return s }), " · "), Title: string(r.CaseSet)},
	}
}

// addCases fills the case × arm grid, in chunks of gridChunkRows cases.
func (v *htmlView) addCases(r *verdict.Report) {
	for _, c := range r.Cases {
		hc := htmlCase{ID: c.ID, Description: c.Description, Split: c.Split, Kind: c.Kind, Safety: c.Safety, CompareHref: "#compare=" + urlFragment(c.ID)}
		for _, arm := range reportArmNames(r) {
			ts := c.Trials[arm]
			gc := htmlGridCell{Empty: len(ts) == 0}
			if len(ts) > 0 {
				gc.Summary = passCount(ts)
			}
			for _, t := range ts {
				ht := htmlTrial{Symbol: trialSymbol(t), Class: trialClass(t), Title: trialTitle(t)}
				if t.Status != grade.StatusMissing {
					ht.Href = cellHref(t.Cell)
					ht.DiffHref = ht.Href + "&show=diff"
				}
				gc.Trials = append(gc.Trials, ht)
			}
			hc.Cells = append(hc.Cells, gc)
		}
		if len(v.CaseChunks) == 0 || len(v.CaseChunks[len(v.CaseChunks)-1].Cases) == gridChunkRows {
			v.CaseChunks = append(v.CaseChunks, htmlCaseChunk{First: len(v.CaseChunks) == 0})
		}
		ch := &v.CaseChunks[len(v.CaseChunks)-1]
		ch.Cases = append(ch.Cases, hc)
		ch.Height += 58
		if c.Description != "" {
			ch.Height += 18
		}
		trials := 0
		for _, gc := range hc.Cells {
			trials = max(trials, len(gc.Trials))
		}
		v.ArmWidth = max(v.ArmWidth, 28*trials+24, 110)
	}
}

// addRules fills the policy's rule outcomes.
func (v *htmlView) addRules(r *verdict.Report) {
	for _, ro := range r.Verdict.Rules {
		v.Rules = append(v.Rules, htmlRule{
			Rule: ro.Rule, Severity: ro.Severity, Detail: ro.Detail, Met: ro.Met, NotMeasured: ro.NotMeasured != "",
			Reasons: ro.Reasons, Flags: ro.Flags, Warnings: ro.Warnings,
		})
		if ro.Inference != nil {
			v.Rules[len(v.Rules)-1].Inference = ro.Inference.String()
		}
		if !ro.Met {
			v.RulesFailed++
		}
	}
}

// addPairwise fills the pairwise judgements, one group per candidate and baseline.
func (v *htmlView) addPairwise(r *verdict.Report, armIndex map[string]int) {
	for _, g := range pairGroups(r) {
		hg := htmlPairGroup{
			Candidate: g.candidate, Baseline: g.baseline,
			CandidateClass: armClass(armIndex[g.candidate]), BaselineClass: armClass(armIndex[g.baseline]),
		}
		for _, row := range g.rows {
			hr := htmlPairRow{Case: row.caseID}
			for _, pr := range row.results {
				hr.Trials = append(hr.Trials, htmlTrial{Symbol: pairSymbol(pr), Class: pairClass(pr.Outcome), Title: pairTitle(pr)})
				switch pr.Outcome {
				case grade.PairwiseWin:
					hr.Wins++
				case grade.PairwiseLoss:
					hr.Losses++
				default:
					hr.Ties++
				}
			}
			hg.Wins, hg.Ties, hg.Losses = hg.Wins+hr.Wins, hg.Ties+hr.Ties, hg.Losses+hr.Losses
			hg.Rows = append(hg.Rows, hr)
		}
		v.Pairwise = append(v.Pairwise, hg)
	}
}

// addDisputes fills the disputed answers, when there are any.
func (v *htmlView) addDisputes(r *verdict.Report) {
	if a := r.Adjudication; a != nil && len(a.Disputed) > 0 {
		v.Disputes = &htmlDisputes{Enabled: a.Enabled, Adjudicator: strings.TrimSpace(a.Provider + " " + a.Model)}
		for _, d := range a.Disputed {
			v.Disputes.Rows = append(v.Disputes.Rows, htmlDispute{Cell: d.Cell, Disagreed: d.Disagreed, Decision: d.Decision, Failed: strings.Join(d.Failed, "; "), Passed: d.Passed})
		}
	}
}

func orAbsent(s string) string {
	if s == "" {
		return absentMark
	}
	return s
}

func judgeText(j *verdict.JudgeIdentity) string {
	if j == nil {
		return "none (deterministic checks only)"
	}
	s := j.Provider
	if j.Model != "" {
		s += " " + j.Model
	}
	if j.Mode != "" {
		s += " · " + j.Mode
	}
	return s
}

// statusText lists an arm's cell statuses in a fixed order.
func statusText(st map[string]int) string {
	order := []string{grade.StatusCompleted, grade.StatusFailed, grade.StatusTimeout, grade.StatusOOM, grade.StatusInvalid, grade.StatusMissing}
	var parts []string
	seen := map[string]bool{}
	for _, s := range order {
		seen[s] = true
		if n := st[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	var other []string
	for s, n := range st {
		if !seen[s] && n > 0 {
			other = append(other, fmt.Sprintf("%d %s", n, s))
		}
	}
	sort.Strings(other)
	return strings.Join(append(parts, other...), " · ")
}

func pairClass(outcome string) string {
	switch outcome {
	case grade.PairwiseWin:
		return "pass"
	case grade.PairwiseLoss:
		return "fail"
	default:
		return "missing"
	}
}
