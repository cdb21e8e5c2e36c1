package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// FileSkillCreatorBenchmark is skill-creator's benchmark file in a run
// folder of a suite that reads skill-creator's evals.
const FileSkillCreatorBenchmark = "benchmark.json"

// skill-creator's two configurations, the format's arms, in the order its
// delta reads them (the first minus the second).
var skillCreatorConfigurations = []string{"with_skill", "without_skill"}

// skillCreatorEvalPrefix names the case of an eval: "eval-<id>".
const skillCreatorEvalPrefix = "eval-"

// writeSkillCreator writes skill-creator's benchmark.json into the run
// folder dir, from the evals' cells and their evidence; without evidence
// (the expectations' judgements) it writes nothing.
func writeSkillCreator(dir string, r *verdict.Report, ev *Evidence) error {
	if ev == nil {
		return nil
	}
	b, err := RenderSkillCreatorBenchmark(r, ev)
	if err != nil || b == nil {
		return err
	}
	return pipeline.WriteFile(filepath.Join(dir, FileSkillCreatorBenchmark), b)
}

// scStats is skill-creator's summary of one measure: mean, sample standard
// deviation, min and max, rounded to 4 places.
// Min and Max are a pyNum, or an int64 over whole numbers (tokens), as
// Python keeps them.
type scStats struct {
	Mean   pyNum `json:"mean"`
	Stddev pyNum `json:"stddev"`
	Min    any   `json:"min"`
	Max    any   `json:"max"`
}

// pyNum is a float written as Python's json writes it: its shortest form,
// with ".0" on a whole number.
type pyNum float64

// MarshalJSON writes the number as Python does.
func (n pyNum) MarshalJSON() ([]byte, error) { return []byte(pyFloat(float64(n))), nil }

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// skillCreatorStats summarizes xs; whole keeps min and max whole numbers.
func skillCreatorStats(xs []float64, whole bool) scStats {
	if len(xs) == 0 {
		if whole {
			return scStats{0, 0, int64(0), int64(0)}
		}
		return scStats{0, 0, pyNum(0), pyNum(0)}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	var sd float64
	if len(xs) > 1 {
		var v float64
		for _, x := range xs {
			v += (x - mean) * (x - mean)
		}
		sd = math.Sqrt(v / float64(len(xs)-1))
	}
	if whole {
		return scStats{pyNum(round4(mean)), pyNum(round4(sd)), int64(slices.Min(xs)), int64(slices.Max(xs))}
	}
	return scStats{pyNum(round4(mean)), pyNum(round4(sd)), pyNum(round4(slices.Min(xs))), pyNum(round4(slices.Max(xs)))}
}

// RenderSkillCreatorBenchmark renders benchmark.json in the shape of
// skill-creator's benchmark mode (references/schemas.md): metadata, one
// run per valid eval cell with its expectations as the judge graded them,
// each configuration's pass rate, time and tokens summarized, and the
// delta of with_skill over without_skill. Trigger queries are no evals and
// are left out; nil when the report has no eval cell. The run's time is
// not part of a report, so metadata has no timestamp.
func RenderSkillCreatorBenchmark(r *verdict.Report, ev *Evidence) ([]byte, error) {
	type expectation struct {
		Text     string `json:"text"`
		Passed   bool   `json:"passed"`
		Evidence string `json:"evidence"`
	}
	type result struct {
		PassRate    pyNum `json:"pass_rate"`
		Passed      int   `json:"passed"`
		Failed      int   `json:"failed"`
		Total       int   `json:"total"`
		TimeSeconds pyNum `json:"time_seconds"`
		Tokens      int64 `json:"tokens"`
		ToolCalls   int   `json:"tool_calls"`
		Errors      int   `json:"errors"`
	}
	type run struct {
		EvalID        int           `json:"eval_id"`
		EvalName      string        `json:"eval_name,omitempty"`
		Configuration string        `json:"configuration"`
		RunNumber     int           `json:"run_number"`
		Result        result        `json:"result"`
		Expectations  []expectation `json:"expectations"`
		Notes         []string      `json:"notes"`
	}
	type summary struct {
		PassRate    scStats `json:"pass_rate"`
		TimeSeconds scStats `json:"time_seconds"`
		Tokens      scStats `json:"tokens"`
	}
	runs := []run{}
	evals := []int{}
	measures := map[string]*[3][]float64{}
	for _, c := range skillCreatorConfigurations {
		measures[c] = &[3][]float64{}
	}
	for _, cr := range r.Cases {
		idText, ok := strings.CutPrefix(cr.ID, skillCreatorEvalPrefix)
		id, err := strconv.Atoi(idText)
		if !ok || err != nil {
			continue
		}
		seen := false
		for _, conf := range skillCreatorConfigurations {
			for _, t := range cr.Trials[conf] {
				ce, ok := ev.Cells[t.Cell]
				if !ok || t.Status == grade.StatusInvalid || t.Status == grade.StatusMissing {
					continue
				}
				seen = true
				rn := run{EvalID: id, EvalName: cr.Description, Configuration: conf, RunNumber: t.Trial, Expectations: []expectation{}, Notes: []string{}}
				for _, ch := range ce.Checks {
					if ch.Kind != grade.CheckJudge {
						continue
					}
					text := ch.Name
					if _, after, found := strings.Cut(ch.Name, ": "); found && strings.HasPrefix(ch.Name, "rubric ") {
						text = after
					}
					rn.Expectations = append(rn.Expectations, expectation{text, ch.Passed, ch.Detail})
					rn.Result.Total++
					if ch.Passed {
						rn.Result.Passed++
					}
				}
				rn.Result.Failed = rn.Result.Total - rn.Result.Passed
				if rn.Result.Total > 0 {
					rn.Result.PassRate = pyNum(math.Round(100*float64(rn.Result.Passed)/float64(rn.Result.Total)) / 100)
				}
				rn.Result.TimeSeconds = pyNum(math.Round(ce.TotalSeconds*10) / 10)
				if ce.Tokens != nil {
					rn.Result.Tokens = ce.Tokens.Input + ce.Tokens.Output + ce.Tokens.CacheRead + ce.Tokens.CacheWrite
				}
				for _, tu := range ce.Turns {
					if tu.Tool != "" {
						rn.Result.ToolCalls++
					}
				}
				if t.Status != grade.StatusCompleted {
					rn.Result.Errors = 1
				}
				runs = append(runs, rn)
				m := measures[conf]
				m[0] = append(m[0], float64(rn.Result.PassRate))
				m[1] = append(m[1], float64(rn.Result.TimeSeconds))
				m[2] = append(m[2], float64(rn.Result.Tokens))
			}
		}
		if seen {
			evals = append(evals, id)
		}
	}
	if len(runs) == 0 {
		return nil, nil
	}
	slices.Sort(evals)
	// skill-creator lists runs configuration by configuration.
	slices.SortStableFunc(runs, func(a, b run) int {
		return slices.Index(skillCreatorConfigurations, a.Configuration) - slices.Index(skillCreatorConfigurations, b.Configuration)
	})
	sums := map[string]summary{}
	for _, c := range skillCreatorConfigurations {
		m := measures[c]
		sums[c] = summary{skillCreatorStats(m[0], false), skillCreatorStats(m[1], false), skillCreatorStats(m[2], true)}
	}
	with, without := sums[skillCreatorConfigurations[0]], sums[skillCreatorConfigurations[1]]
	skill := ""
	for _, a := range r.Arms {
		if a.Name == skillCreatorConfigurations[0] && len(a.Skills) > 0 {
			skill = a.Skills[0]
		}
	}
	analyzer := ""
	if r.Judge != nil {
		analyzer = r.Judge.Model
	}
	doc := struct {
		Metadata struct {
			SkillName            string `json:"skill_name"`
			ExecutorModel        string `json:"executor_model"`
			AnalyzerModel        string `json:"analyzer_model"`
			EvalsRun             []int  `json:"evals_run"`
			RunsPerConfiguration int    `json:"runs_per_configuration"`
		} `json:"metadata"`
		Runs       []run `json:"runs"`
		RunSummary struct {
			WithSkill    summary           `json:"with_skill"`
			WithoutSkill summary           `json:"without_skill"`
			Delta        map[string]string `json:"delta"`
		} `json:"run_summary"`
		Notes []string `json:"notes"`
	}{Runs: runs, Notes: []string{}}
	doc.Metadata.SkillName, doc.Metadata.ExecutorModel, doc.Metadata.AnalyzerModel = skill, r.Agent.Model, analyzer
	doc.Metadata.EvalsRun, doc.Metadata.RunsPerConfiguration = evals, r.Trials
	doc.RunSummary.WithSkill, doc.RunSummary.WithoutSkill = with, without
	doc.RunSummary.Delta = map[string]string{
		"pass_rate":    fmt.Sprintf("%+.2f", float64(with.PassRate.Mean-without.PassRate.Mean)),
		"time_seconds": fmt.Sprintf("%+.1f", float64(with.TimeSeconds.Mean-without.TimeSeconds.Mean)),
		"tokens":       fmt.Sprintf("%+.0f", float64(with.Tokens.Mean-without.Tokens.Mean)),
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("render %s: %w", FileSkillCreatorBenchmark, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
