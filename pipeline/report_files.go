package pipeline

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"
)

// Report files in a run folder.
const (
	FileVerdictJSON = "verdict.json"
	FileReportJSON  = "report.json"
	FileReportMD    = "report.md"
	FileReportHTML  = "report.html"
	FileJUnitXML    = "junit.xml"
)

// WriteReports renders r into dir as verdict.json (gstack's shape),
// report.json, report.md, report.html and junit.xml. Every file is a pure
// function of r (the same Report gives the same bytes) and is written
// atomically; nothing is written unless every file renders.
func WriteReports(dir string, r *Report) error {
	if r == nil {
		return fmt.Errorf("write reports: no report")
	}
	renderers := []struct {
		name   string
		render func(*Report) ([]byte, error)
	}{
		{FileVerdictJSON, renderVerdictJSON},
		{FileReportJSON, renderReportJSON},
		{FileReportMD, renderReportMD},
		{FileReportHTML, renderReportHTML},
		{FileJUnitXML, renderJUnit},
	}
	out := make([][]byte, len(renderers))
	for i, rd := range renderers {
		b, err := rd.render(r)
		if err != nil {
			return fmt.Errorf("render %s: %w", rd.name, err)
		}
		out[i] = b
	}
	for i, rd := range renderers {
		if err := WriteFile(filepath.Join(dir, rd.name), out[i]); err != nil {
			return err
		}
	}
	return nil
}

// ---- report.json ----

func renderReportJSON(r *Report) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ---- verdict.json (gstack's skill eval contract) ----

// jsonObject is a JSON object that keeps its keys in the given order
// (arms and cases in authored order).
type jsonObject []jsonField

type jsonField struct {
	Key   string
	Value any
}

func (o jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type gstackVerdict struct {
	Verdict        string     `json:"verdict"`
	Reasons        []string   `json:"reasons"`
	Warnings       []string   `json:"warnings"`
	HarnessVersion string     `json:"harness_version"`
	Model          string     `json:"model"`
	Trials         int        `json:"trials"`
	Arms           jsonObject `json:"arms"`
	Tasks          jsonObject `json:"tasks"`
	// Adjudication is given when the suite has a judge; skillgate's judge
	// packets are always blinded.
	Adjudication *gstackAdjudication `json:"adjudication,omitempty"`
	ExitCode     int                 `json:"exit_code"`
	Resumable    bool                `json:"resumable"`
	// StandIn (an extension) says the agent or model was a scripted stand-in.
	StandIn string `json:"stand_in,omitempty"`
	// Calibration: the three checks, when they ran.
	Calibration *Calibration `json:"calibration,omitempty"`
	// Identity (an extension) names every input of the verdict.
	Identity gstackIdentity `json:"identity"`
}

// gstackIdentity names the verdict's inputs: the plan, every case by
// digest and the case set, every arm's installed skill revisions, the
// agent as configured and as observed, the judge, and the suite's git
// revisions.
type gstackIdentity struct {
	Suite   string        `json:"suite"`
	Plan    digest.Digest `json:"plan"`
	CaseSet digest.Digest `json:"case_set"`
	// Cases: case ID → case digest, in authored order.
	Cases jsonObject `json:"cases"`
	// Arms: arm name → its installed skills, in authored order.
	Arms  jsonObject     `json:"arms"`
	Agent gstackAgent    `json:"agent"`
	Judge *JudgeIdentity `json:"judge,omitempty"`
	Git   gstackGit      `json:"git"`
}

type gstackAgent struct {
	Kind     string         `json:"kind"`
	Image    string         `json:"image"`
	Model    string         `json:"model,omitempty"`
	Provider string         `json:"provider"`
	Host     string         `json:"host,omitempty"`
	Digest   digest.Digest  `json:"digest"`
	Observed gstackObserved `json:"observed"`
}

type gstackObserved struct {
	Rollouts      int      `json:"rollouts"`
	Models        []string `json:"models"`
	AgentImages   []string `json:"agent_images"`
	AgentVersions []string `json:"agent_versions"`
	CLIVersions   []string `json:"cli_versions"`
	Harness       []string `json:"harness"`
}

type gstackGit struct {
	Revisions []GitRevision `json:"revisions"`
	Mixed     bool          `json:"mixed"`
}

func gstackIdentityOf(r *Report) gstackIdentity {
	o := r.Observed
	id := gstackIdentity{
		Suite: r.Suite, Plan: r.Plan, CaseSet: r.CaseSet, Cases: jsonObject{}, Arms: jsonObject{},
		Agent: gstackAgent{
			Kind: r.Agent.Kind, Image: r.Agent.Image, Model: r.Agent.Model, Provider: r.Agent.Provider, Host: r.Agent.Host, Digest: r.Agent.Digest,
			Observed: gstackObserved{
				Rollouts: o.Rollouts, Models: nonNilStrings(o.Models), AgentImages: nonNilStrings(o.AgentImages),
				AgentVersions: nonNilStrings(o.AgentVersions), CLIVersions: nonNilStrings(o.CLIVersions), Harness: nonNilStrings(o.Harness),
			},
		},
		Judge: r.Judge,
		Git:   gstackGit{Revisions: o.Git, Mixed: o.GitMixed},
	}
	if id.Git.Revisions == nil {
		id.Git.Revisions = []GitRevision{}
	}
	for _, c := range r.Cases {
		id.Cases = append(id.Cases, jsonField{c.ID, c.Digest})
	}
	for _, a := range r.Arms {
		installed := a.Installed
		if installed == nil {
			installed = []InstalledSkill{}
		}
		id.Arms = append(id.Arms, jsonField{a.Name, installed})
	}
	return id
}

// harnessVersion is verdict.json's harness_version: skillgate and the
// version that built the report.
func harnessVersion(r *Report) string {
	if r.Harness == "" {
		return "skillgate"
	}
	return "skillgate " + r.Harness
}

// gstackAdjudication is gstack's adjudication: the adjudicator's model and
// the disputed answers.
type gstackAdjudication struct {
	Blinded    bool             `json:"blinded"`
	JudgeModel string           `json:"judge_model"`
	Disputed   []gstackDisputed `json:"disputed"`
}

// gstackDisputed is one disputed answer: which, what disagreed and what
// the adjudicator decided (pass, fail, invalid or not adjudicated).
type gstackDisputed struct {
	Case      string `json:"case"`
	Arm       string `json:"arm"`
	Trial     int    `json:"trial"`
	Disagreed string `json:"disagreed"`
	Decision  string `json:"decision"`
}

// gstackArm: every figure is null when nothing was measured, never 0.
type gstackArm struct {
	PassRate        *float64       `json:"pass_rate"`
	TokensPerRun    gstackTokens   `json:"tokens_per_run"`
	TurnsPerRun     *float64       `json:"turns_per_run"`
	OpenedSkillRate *float64       `json:"opened_skill_rate"`
	FilesLoaded     map[string]int `json:"files_loaded"`
	// CostUSD is the arm's total over the cells whose cost is known
	// (mean per cell × cells).
	CostUSD *float64 `json:"cost_usd"`
}

type gstackTokens struct {
	Input      *float64 `json:"input"`
	Output     *float64 `json:"output"`
	CacheRead  *float64 `json:"cache_read"`
	CacheWrite *float64 `json:"cache_write"`
}

func metricValuePtr(m map[string]Metric, key string) *float64 {
	v, ok := m[key]
	if !ok {
		return nil
	}
	x := v.Value
	return &x
}

func renderVerdictJSON(r *Report) ([]byte, error) {
	v := gstackVerdict{
		Verdict:        r.Verdict.Verdict,
		Reasons:        nonNilStrings(r.Verdict.Reasons),
		Warnings:       nonNilStrings(r.Verdict.Warnings),
		HarnessVersion: harnessVersion(r),
		Model:          r.Agent.Model,
		Trials:         r.Trials,
		Arms:           jsonObject{},
		Tasks:          jsonObject{},
		ExitCode:       r.Verdict.ExitCode,
		Resumable:      r.Verdict.Resumable,
		StandIn:        r.StandIn,
		Calibration:    r.Calibration,
		Identity:       gstackIdentityOf(r),
	}
	if r.Judge != nil {
		v.Adjudication = &gstackAdjudication{Blinded: true, JudgeModel: r.Judge.Model, Disputed: []gstackDisputed{}}
		if a := r.Adjudication; a != nil {
			if a.Model != "" {
				v.Adjudication.JudgeModel = a.Model
			}
			for _, d := range a.Disputed {
				v.Adjudication.Disputed = append(v.Adjudication.Disputed, gstackDisputed{Case: d.Case, Arm: d.Arm, Trial: d.Trial, Disagreed: d.Disagreed, Decision: d.Decision})
			}
		}
	}
	for _, a := range r.Arms {
		ga := gstackArm{
			PassRate: metricValuePtr(a.Metrics, "taskSuccess"),
			TokensPerRun: gstackTokens{
				Input:      metricValuePtr(a.Cost, "tokensInput"),
				Output:     metricValuePtr(a.Cost, "tokensOutput"),
				CacheRead:  metricValuePtr(a.Cost, "tokensCacheRead"),
				CacheWrite: metricValuePtr(a.Cost, "tokensCacheWrite"),
			},
			TurnsPerRun:     metricValuePtr(a.Cost, "turns"),
			OpenedSkillRate: metricValuePtr(a.Metrics, "openedSkill"),
			FilesLoaded:     a.FilesLoaded,
		}
		if ga.FilesLoaded == nil {
			ga.FilesLoaded = map[string]int{}
		}
		if m, ok := a.Cost["usd"]; ok {
			total := math.Round(m.Value*float64(m.Samples)*1e6) / 1e6
			ga.CostUSD = &total
		}
		v.Arms = append(v.Arms, jsonField{a.Name, ga})
	}
	arms := reportArmNames(r)
	for _, c := range r.Cases {
		per := jsonObject{}
		for _, arm := range arms {
			ts, ok := c.Trials[arm]
			if !ok {
				continue
			}
			// One entry per trial: true passed, false failed, null when
			// the cell is missing or invalid (neither a pass nor a fail).
			bs := make([]*bool, len(ts))
			for i, t := range ts {
				switch trialClass(t) {
				case "pass":
					bs[i] = reportPtr(true)
				case "fail":
					bs[i] = reportPtr(false)
				}
			}
			per = append(per, jsonField{arm, bs})
		}
		v.Tasks = append(v.Tasks, jsonField{c.ID, per})
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	// Trial lists on one line, as in gstack's example: [true, true, false].
	b = boolList.ReplaceAllFunc(b, func(m []byte) []byte {
		return append(append([]byte("["), bytes.Join(bytes.Fields(bytes.Trim(m, "[]")), []byte(" "))...), ']')
	})
	return append(b, '\n'), nil
}

// boolList matches an indented JSON array of booleans and nulls; its
// newlines keep it from matching inside a string.
var boolList = regexp.MustCompile(`\[\n\s*(?:true|false|null)(?:,\n\s*(?:true|false|null))*\n\s*\]`)

// ---- junit.xml ----

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func (s *junitSuite) add(c junitCase) {
	s.Tests++
	switch {
	case c.Failure != nil:
		s.Failures++
	case c.Error != nil:
		s.Errors++
	case c.Skipped != nil:
		s.Skipped++
	}
	s.Cases = append(s.Cases, c)
}

// renderJUnit writes one testsuite per arm (CI test views group by suite,
// then by classname = case) with one testcase per cell, and a "policy"
// testsuite with one testcase per rule.
func renderJUnit(r *Report) ([]byte, error) {
	root := junitSuites{Name: "skillgate " + r.Suite}
	for _, arm := range reportArmNames(r) {
		s := junitSuite{Name: arm}
		if a := reportArm(r, arm); a != nil {
			s.Properties = []junitProperty{
				{"skills", strings.Join(a.Skills, ",")},
				{"activation", a.Activation},
			}
		}
		for _, c := range r.Cases {
			for _, t := range c.Trials[arm] {
				jc := junitCase{ClassName: c.ID, Name: cellName(c.ID, arm, t)}
				switch trialClass(t) {
				case "missing":
					jc.Skipped = &junitMessage{Message: "not run"}
				case "invalid":
					jc.Error = &junitMessage{Message: "invalid run", Type: t.Status}
				case "fail":
					jc.Failure = &junitMessage{Message: failSummary(t), Type: t.Status}
					if t.Status == StatusCompleted {
						jc.Failure.Type = "checks"
					}
					if len(t.Failed) > 0 {
						jc.Failure.Text = strings.Join(t.Failed, "\n")
					}
				}
				if href := rolloutHref(t, "stdout.txt"); href != "" {
					jc.SystemOut = "transcript: " + href + "\nworkspace: " + rolloutHref(t, "workspace/")
				}
				s.add(jc)
			}
		}
		root.Suites = append(root.Suites, s)
	}
	pol := junitSuite{Name: "policy"}
	if r.Policy != "" {
		pol.Properties = []junitProperty{{"policy", r.Policy}, {"verdict", r.Verdict.Verdict}}
	}
	// The verdict's reasons, those of no rule too (cells not judged, and
	// why), so a CI view shows what made it.
	for _, reason := range r.Verdict.Reasons {
		pol.Properties = append(pol.Properties, junitProperty{"reason", reason})
	}
	for _, ro := range r.Verdict.Rules {
		jc := junitCase{ClassName: "policy", Name: ro.Rule}
		if !ro.Met {
			msg := strings.Join(ro.Reasons, "; ")
			if msg == "" {
				msg = "not met"
			}
			jc.Failure = &junitMessage{Message: msg, Type: ro.Severity, Text: ro.Detail}
		}
		var out []string
		if ro.Met && ro.Detail != "" {
			out = append(out, ro.Detail)
		}
		for _, f := range ro.Flags {
			out = append(out, "flag: "+f)
		}
		for _, w := range ro.Warnings {
			out = append(out, "warning: "+w)
		}
		jc.SystemOut = strings.Join(out, "\n")
		pol.add(jc)
	}
	root.Suites = append(root.Suites, pol)
	for _, s := range root.Suites {
		root.Tests += s.Tests
		root.Failures += s.Failures
		root.Errors += s.Errors
		root.Skipped += s.Skipped
	}
	b, err := xml.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(append([]byte(xml.Header), b...), '\n'), nil
}

// ---- helpers shared by the renderers ----

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func reportPtr[T any](v T) *T { return &v }

// reportArmNames lists the arms in authored order, then any arm that only
// cases mention, sorted.
func reportArmNames(r *Report) []string {
	var names []string
	seen := map[string]bool{}
	for _, a := range r.Arms {
		if !seen[a.Name] {
			seen[a.Name] = true
			names = append(names, a.Name)
		}
	}
	var extra []string
	for _, c := range r.Cases {
		for arm := range c.Trials {
			if !seen[arm] {
				seen[arm] = true
				extra = append(extra, arm)
			}
		}
	}
	sort.Strings(extra)
	return append(names, extra...)
}

func reportArm(r *Report, name string) *ArmReport {
	for i := range r.Arms {
		if r.Arms[i].Name == name {
			return &r.Arms[i]
		}
	}
	return nil
}

// trialClass is "pass", "fail", "missing" or "invalid".
func trialClass(t TrialOutcome) string {
	switch {
	case t.Status == StatusMissing || t.Status == "":
		return "missing"
	case t.Status == StatusInvalid:
		return "invalid"
	case t.Passed:
		return "pass"
	default:
		return "fail"
	}
}

func trialSymbol(t TrialOutcome) string {
	switch trialClass(t) {
	case "pass":
		return "✓"
	case "fail":
		return "✗"
	case "invalid":
		return "!"
	default:
		return "–"
	}
}

func cellName(caseID, arm string, t TrialOutcome) string {
	if t.Cell != "" {
		return t.Cell
	}
	return fmt.Sprintf("%s/%s/%d", caseID, arm, t.Trial)
}

// failSummary says why a valid cell failed.
func failSummary(t TrialOutcome) string {
	if t.Status != StatusCompleted && t.Status != "" {
		if len(t.Failed) > 0 {
			return t.Status + "; failed: " + strings.Join(t.Failed, ", ")
		}
		return t.Status
	}
	if len(t.Failed) > 0 {
		return "failed: " + strings.Join(t.Failed, ", ")
	}
	return "failed"
}

// trialTitle describes one trial for a tooltip.
func trialTitle(t TrialOutcome) string {
	s := fmt.Sprintf("trial %d: ", t.Trial)
	switch trialClass(t) {
	case "pass":
		return s + "passed"
	case "missing":
		return s + "not run"
	case "invalid":
		return s + "invalid run (neither pass nor fail)"
	default:
		return s + failSummary(t)
	}
}

// rolloutHref is the link, relative to the run folder, to a file of the
// trial's stored rollout; "" when the cell has no rollout.
func rolloutHref(t TrialOutcome, file string) string {
	if t.Rollout == "" || t.Status == StatusMissing {
		return ""
	}
	return "store/rollouts/" + digestHex(t.Rollout) + "/" + file
}

func digestHex(d digest.Digest) string {
	s := string(d)
	if i := strings.IndexByte(s, ':'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// shortDigest is "sha256:" and the first 12 hex digits.
func shortDigest(d digest.Digest) string {
	s := string(d)
	if s == "" {
		return "—"
	}
	alg, hex := "", s
	if i := strings.IndexByte(s, ':'); i >= 0 {
		alg, hex = s[:i+1], s[i+1:]
	}
	if len(hex) > 12 {
		hex = hex[:12]
	}
	return alg + hex
}

// pct formats a rate as a whole percentage.
func fmtPct(v float64) string {
	return fmt.Sprintf("%.0f%%", v*100)
}

// ciText is "[lo–hi%]" for a metric with an interval, else "".
func ciText(m Metric) string {
	if m.CI95 == nil {
		return ""
	}
	return fmt.Sprintf("[%.0f–%.0f%%]", m.CI95[0]*100, m.CI95[1]*100)
}

// fmtNum formats a mean: thousands separated and whole above 100, else
// with one or two decimals.
func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return groupThousands(fmt.Sprintf("%.0f", v))
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func fmtInt(v int64) string {
	return groupThousands(fmt.Sprintf("%d", v))
}

func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func fmtUSD(v float64) string {
	if math.Abs(v) >= 1 {
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.4f", v)
}

// passCount is "passed/valid" over a case's trials in one arm.
func passCount(ts []TrialOutcome) string {
	pass, valid := 0, 0
	for _, t := range ts {
		switch trialClass(t) {
		case "pass":
			pass++
			valid++
		case "fail":
			valid++
		}
	}
	return fmt.Sprintf("%d/%d", pass, valid)
}

var metricLabels = map[string]string{
	"taskSuccess":        "task success",
	"openedSkill":        "opened skill",
	"skillPrecision":     "skill precision",
	"skillRecall":        "skill recall",
	"referencePrecision": "reference precision",
	"referenceRecall":    "reference recall",
	"invalidRun":         "invalid runs",
	"prohibitedOutcome":  "prohibited outcome",
	"noChange":           "no-change controls",
}

func metricLabel(name string) string {
	if l, ok := metricLabels[name]; ok {
		return l
	}
	return name
}

// rateMetricOrder fixes the order of the rate metrics shown first.
var rateMetricOrder = []string{
	"taskSuccess", "openedSkill", "skillPrecision", "skillRecall",
	"referencePrecision", "referenceRecall", "prohibitedOutcome", "invalidRun",
}

// rateMetrics lists the rate metrics any arm has: the known ones in a fixed
// order, then every other metric with an interval (or a passAtK), sorted.
func rateMetrics(r *Report) []string {
	isRate := map[string]bool{}
	for _, a := range r.Arms {
		for k, m := range a.Metrics {
			if m.CI95 != nil || strings.HasPrefix(k, "passAtK.") {
				isRate[k] = true
			}
		}
	}
	var out []string
	for _, k := range rateMetricOrder {
		for _, a := range r.Arms {
			if _, ok := a.Metrics[k]; ok {
				out = append(out, k)
				delete(isRate, k)
				break
			}
		}
	}
	var rest []string
	for k := range isRate {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// pairGroup is the pairwise judgements of one candidate against one
// baseline, by case in authored order, by trial.
type pairGroup struct {
	candidate, baseline string
	rows                []pairRow
}

type pairRow struct {
	caseID  string
	results []PairwiseResult
}

func pairGroups(r *Report) []pairGroup {
	caseOrder := map[string]int{}
	for i, c := range r.Cases {
		caseOrder[c.ID] = i
	}
	var groups []pairGroup
	index := map[[2]string]int{}
	for _, p := range r.Pairwise {
		k := [2]string{p.Candidate, p.Baseline}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, pairGroup{candidate: p.Candidate, baseline: p.Baseline})
		}
		g := &groups[i]
		j := -1
		for n := range g.rows {
			if g.rows[n].caseID == p.Case {
				j = n
			}
		}
		if j < 0 {
			g.rows = append(g.rows, pairRow{caseID: p.Case})
			j = len(g.rows) - 1
		}
		g.rows[j].results = append(g.rows[j].results, p)
	}
	for gi := range groups {
		rows := groups[gi].rows
		sort.SliceStable(rows, func(a, b int) bool {
			oa, aok := caseOrder[rows[a].caseID]
			ob, bok := caseOrder[rows[b].caseID]
			if aok != bok {
				return aok
			}
			if !aok {
				return rows[a].caseID < rows[b].caseID
			}
			return oa < ob
		})
		for _, row := range rows {
			sort.SliceStable(row.results, func(a, b int) bool { return row.results[a].Trial < row.results[b].Trial })
		}
	}
	return groups
}

// pairSymbol is W, T or L, with "≠" when the two presentation orders
// disagreed.
func pairSymbol(p PairwiseResult) string {
	s := "T"
	switch p.Outcome {
	case PairwiseWin:
		s = "W"
	case PairwiseLoss:
		s = "L"
	}
	if pairDisagrees(p) {
		s += "≠"
	}
	return s
}

func pairDisagrees(p PairwiseResult) bool {
	for _, o := range p.Orders {
		if o != p.Orders[0] {
			return true
		}
	}
	return false
}

func pairTitle(p PairwiseResult) string {
	s := fmt.Sprintf("trial %d: %s for %s against %s", p.Trial, p.Outcome, p.Candidate, p.Baseline)
	if len(p.Orders) > 0 {
		s += " (by presentation order: " + strings.Join(p.Orders, ", ") + ")"
	}
	return s
}
