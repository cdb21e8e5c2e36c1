package readback

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/runner/agent"
	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// evidenceDiffBytes bounds a changed file read for the report's diff: a larger one is
// named with its size, its content left in the store.
const evidenceDiffBytes = 1 << 20

// CellEvidence reads from the store what the report shows of each graded cell beyond
// its grade: what its agent was asked, its session turn by turn, its answer, the diff of
// every file it changed, its checks, the judge's reply, its durations and cost. It reads
// only the run folder (a skill stored without its snapshot reads as unchanged), so
// `skillgate report` rebuilds it with no suite folder.
func CellEvidence(p *plan.Plan, st *store.Store, results []grade.CellResult) (*report.Evidence, error) {
	cases, arms := p.CasesByID(), p.ArmsByName()
	ev := &report.Evidence{Cells: map[string]report.CellEvidence{}, Plan: p}
	agentPlan := agentPlans(p)
	for _, res := range results {
		if res.Status == grade.StatusMissing || res.Rollout == "" {
			continue
		}
		ro, ok, err := st.Rollout(res.Rollout)
		if err != nil {
			return nil, err
		}
		pc, okc := cases[res.Case]
		arm, oka := arms[res.Arm]
		if !ok || !okc || !oka {
			continue
		}
		ce, err := rolloutEvidence(agentPlan(res.Cell), st, pc, arm, ro, res)
		if err != nil {
			return nil, fmt.Errorf("read evidence of %s: %w", res.Cell, err)
		}
		ev.Cells[res.Cell] = ce
	}
	return ev, markReused(st.Dir, results, ev)
}

func rolloutEvidence(p *plan.Plan, st *store.Store, pc plan.PlanCase, arm plan.PlanArm, ro *store.Rollout, res grade.CellResult) (report.CellEvidence, error) {
	dir := st.RolloutDir(ro.Key)
	rel := path.Join(store.DirRollouts, ro.Key.Encoded())
	ce := report.CellEvidence{
		Cell: res.Cell, Case: res.Case, Arm: res.Arm, Trial: res.Trial,
		Status: res.Status, Passed: res.Passed, Error: firstNonEmpty(res.Error, ro.Error), ExitCode: ro.ExitCode,
		Prompt: plan.Prompt(p, pc, arm), Seed: pc.Seed,
		Checks: res.Checks, Skills: res.Telemetry.Skills, References: res.Telemetry.References,
		AgentSeconds: ro.Durations.Agent, TotalSeconds: ro.Durations.Total,
		Tokens: res.Telemetry.Tokens, USD: res.Cost.USD, Model: res.Telemetry.Model, Collection: res.Collection,
		Files: map[string]string{
			"transcript": rel + "/" + store.FileStdout, "stderr": rel + "/" + store.FileStderr,
			"answer": rel + "/" + store.FileAnswer, "rollout": rel + "/" + store.FileRollout,
		},
	}
	if g := ro.Gateway; g != nil {
		ce.Requests = g.Requests
		if ce.Model == "" {
			ce.Model = g.ModelAnswered
		}
		ce.ModelAsked, ce.ModelAnswered, ce.LatencySeconds = g.ModelAsked, g.ModelAnswered, g.LatencySeconds
		if ce.USD == nil {
			ce.USD = g.USD
		}
		if t := g.ProviderTokens; t != nil {
			ce.ProviderTokens = &report.ProviderTokens{Convention: t.Convention, Input: t.Input, Output: t.Output, CacheRead: t.CacheRead, CacheWrite: t.CacheWrite}
		}
		if s := g.Sampling; s != nil {
			ce.Sampling = samplingText(s)
		}
		ce.Replayed = g.Replayed != ""
		if g.Exchanges != "" {
			if err := exchangeEvidence(&ce, st.Dir, g.Exchanges); err != nil {
				return ce, err
			}
		}
	}
	if ro.Transcript.Truncated {
		ce.Cut = true
	}
	answer, err := st.Answer(ro)
	if err != nil {
		return ce, err
	}
	ce.Answer = string(answer)
	stdout, err := ReadOptional(filepath.Join(dir, store.FileStdout))
	if err != nil {
		return ce, err
	}
	stderr, err := ReadOptional(filepath.Join(dir, store.FileStderr))
	if err != nil {
		return ce, err
	}
	for _, t := range agent.SessionTurns(p.Agent.Kind, stdout, stderr, pc.Replies) {
		ce.Turns = append(ce.Turns, report.Turn{Role: t.Role, Text: t.Text, Tool: t.Tool, Input: t.Input, Result: t.Result, Loads: t.Loads})
	}
	diffs, err := grade.ChangeDiffs(st.World(p, "", pc, arm, ro), true, evidenceDiffBytes)
	if err != nil {
		return ce, err
	}
	for _, d := range diffs {
		ce.Diffs = append(ce.Diffs, report.FileDiff{Path: d.Path, Kind: d.Kind, Diff: d.Diff, Note: d.Note})
	}
	if j := res.Judge; j != nil {
		je := &report.JudgeEvidence{Criteria: j.Criteria, Rubric: pc.Rubric, Valid: j.Valid, Reason: j.Reason}
		if stored, ok, err := st.Judgement(j.Key); err != nil {
			return ce, err
		} else if ok {
			je.Reply = stored.Reply
		}
		ce.Judge = je
	}
	return ce, nil
}

// exchangeEvidence adds a cell's recorded model exchanges, each with
// where its stored request and response are.
func exchangeEvidence(ce *report.CellEvidence, out string, d digest.Digest) error {
	l, err := gateway.ReadLog(out, d)
	if err != nil {
		return err
	}
	ce.Files["exchanges"] = gateway.LogPath(d)
	for _, ex := range l.Exchanges {
		ee := report.ExchangeEvidence{Seq: ex.Seq, Method: ex.Method, Path: ex.Path, Status: ex.Status,
			ModelAsked: ex.ModelAsked, ModelAnswered: ex.ModelAnswered, LatencySeconds: ex.LatencySeconds,
			Tokens: ex.Tokens, USD: ex.USD, Fault: ex.Fault}
		if ex.Request.Digest != "" {
			ee.Request = gateway.BodyPath(ex.Request.Digest)
		}
		if ex.Response.Digest != "" {
			ee.Response = gateway.BodyPath(ex.Response.Digest)
		}
		ce.Exchanges = append(ce.Exchanges, ee)
	}
	return nil
}

// samplingText is what the gateway set, as the report shows it.
func samplingText(s *gateway.Sampling) string {
	var parts []string
	if s.Temperature != nil {
		parts = append(parts, "temperature "+strconv.FormatFloat(*s.Temperature, 'g', -1, 64))
	}
	if s.Effort != "" {
		parts = append(parts, "effort "+s.Effort)
	}
	return strings.Join(parts, ", ")
}

// ReadOptional reads a stored file; one the rollout never wrote reads as empty.
func ReadOptional(file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

// agentPlans gives a cell's agent's share of the plan by the cell's ID
// (the plan itself on one agent), each share made once.
func agentPlans(p *plan.Plan) func(cell string) *plan.Plan {
	if len(p.Agents) == 0 {
		return func(string) *plan.Plan { return p }
	}
	agentOf := make(map[string]string, len(p.Cells))
	for _, c := range p.Cells {
		agentOf[c.ID] = c.Agent
	}
	shares := map[string]*plan.Plan{}
	return func(cell string) *plan.Plan {
		name := agentOf[cell]
		if q, ok := shares[name]; ok {
			return q
		}
		q := p.ForAgent(name)
		shares[name] = q
		return q
	}
}
