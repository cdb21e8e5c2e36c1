package suite

import (
	"fmt"
	"slices"
)

// StandInLabel names what answers a suite run with UseStandIn; every report and
// verdict.json carries it.
const StandInLabel = "stand-in run (skillgate run --stand-in): skillgate's scripted stand-in model answered for the agent and a stand-in judge for the judge; no real model was asked"

// CalibrationSkippedNote is what a stand-in run says when UseStandIn turned the
// policy's calibration off.
const CalibrationSkippedNote = "calibration: skipped: the stand-in model reads no skill and runs no command, so it cannot pass the calibration checks"

// standInAnswer is what the stand-in model answers a cell: it ends the session at once.
const standInAnswer = "This is skillgate's scripted stand-in model, not a real model: nothing was done. The run shows the pipeline on your files, not what a skill is worth."

// UseStandIn makes the suite run offline, with no key and no network: the agent's model
// becomes the scripted model (the suite's own script when its agent already has one,
// else one that answers every cell at once with a fixed text), the judge and the
// adjudicator become scripted stand-ins (the suite's own scripted judge, else one that
// passes no rubric criterion and calls every comparison a tie), nothing is priced, and the agent carries StandInLabel, which every
// report shows. The agent CLI, the containers, the checks and the verdict are the real
// ones. The fixed-text stand-in reads no skill and runs no command, so it cannot pass
// calibration's checks: with it the policy's calibration is off (CalibrationSkipped
// says so), and the cells run.
func (s *Suite) UseStandIn() {
	s.Agent.StandIn = StandInLabel
	if s.Agent.Provider != "scripted" || s.Agent.Script == nil {
		s.CalibrationSkipped = s.Policy.Calibrate
		s.Policy.Calibrate = false
		s.Agent.Provider = "scripted"
		answer := standInAnswer
		s.Agent.Script = &Script{Model: "stand-in", Rules: []ScriptRule{{Reply: []ScriptBlock{{Text: &answer}}, Usage: ScriptUsage{Input: 100, Output: 20}}}}
	}
	s.Agent.Upstream, s.Agent.UpstreamEnv, s.Agent.UpstreamDefault, s.Agent.CredentialEnv = "", "", "", ""
	s.Agent.Auth, s.Agent.Headers, s.Agent.Replay = "", nil, ""
	free := 0.0
	s.Agent.Prices = &Prices{PerCall: &free}
	if s.Judge == nil {
		return
	}
	j := s.Judge
	script := j.Script
	if j.Provider != "scripted" || script == nil {
		script = s.standInJudgeScript()
	}
	j.Provider, j.Script, j.Command, j.Prices = "scripted", script, nil, &Prices{PerCall: &free}
	j.Upstream, j.UpstreamEnv, j.UpstreamDefault, j.CredentialEnv, j.Auth, j.Headers = "", "", "", "", "", nil
	if a := j.Adjudication.Judge; a != nil {
		a.Provider, a.Script, a.Command, a.Upstream, a.CredentialEnv = "scripted", script, nil, "", ""
	}
}

// standInJudgeScript answers a pairwise question with a tie and a rubric question with
// every criterion unmet: a rubric reply must hold one result per criterion, so a rule
// per rubric length, longest first, tells the count from the packet's last
// criterion index.
func (s *Suite) standInJudgeScript() *Script {
	why := "stand-in judge: no model read the attempt"
	var rules []ScriptRule
	var sizes []int
	for _, c := range s.Cases {
		if n := len(c.Rubric); n > 0 && !slices.Contains(sizes, n) {
			sizes = append(sizes, n)
		}
	}
	slices.Sort(sizes)
	slices.Reverse(sizes)
	for _, n := range sizes {
		reply := `{"criteria":[`
		for i := range n {
			if i > 0 {
				reply += ","
			}
			reply += fmt.Sprintf(`{"criterion":%d,"pass":false,"evidence":%q}`, i, why)
		}
		reply += "]}"
		marker := fmt.Sprintf(`"index": %d,`, n-1)
		rules = append(rules, ScriptRule{When: &ScriptWhen{Contains: &marker}, Reply: []ScriptBlock{{Text: &reply}}, Usage: ScriptUsage{Input: 100, Output: 20}})
	}
	tie := fmt.Sprintf(`{"winner":"tie","evidence":%q}`, why)
	rules = append(rules, ScriptRule{Reply: []ScriptBlock{{Text: &tie}}, Usage: ScriptUsage{Input: 100, Output: 20}})
	return &Script{Model: "stand-in-judge", Rules: rules}
}
