package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// PlanFormat is the version of the plan file format.
const PlanFormat = 1

// Plan is a compiled suite: every cell with its keys and every input by
// digest. Its JSON is canonical: the same suite gives the same bytes in
// every checkout, whatever the file times.
type Plan struct {
	Format int           `json:"format"`
	Digest digest.Digest `json:"digest"`
	Suite  PlanSuite     `json:"suite"`
	Agent  PlanAgent     `json:"agent"`
	// Agents are the agents of a suite on several, in the suite's order;
	// Agent is then the first. Absent for a suite on one agent.
	Agents []PlanAgent  `json:"agents,omitempty"`
	Judge  *PlanJudge   `json:"judge,omitempty"`
	Limits PlanLimits   `json:"limits"`
	Policy suite.Policy `json:"policy"`
	// Skills by suite key, with their trees.
	Skills map[string]PlanSkill `json:"skills"`
	// Fixtures by suite-relative path.
	Fixtures map[string]Tree `json:"fixtures"`
	Arms     []PlanArm       `json:"arms"`
	Cases    []PlanCase      `json:"cases"`
	Cells    []Cell          `json:"cells"`

	// Environments by name, and case folders by suite-relative path.
	Environments map[string]PlanEnvironment `json:"environments,omitempty"`
	CaseDirs     map[string]Tree            `json:"caseDirs,omitempty"`

	// Formats are the other systems whose files the suite's cases come
	// from (fields of the suite's `formats`), sorted; reports add each
	// system's own output files.
	Formats []string `json:"formats,omitempty"`

	// Mutants are the mutant arms of a mutate run; none in a plan of
	// `run`.
	Mutants []MutantArm `json:"mutants,omitempty"`
}

// PlanSuite identifies the suite a plan was compiled from.
type PlanSuite struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Dir is the suite folder relative to the repository root.
	Dir    string `json:"dir"`
	Trials int    `json:"trials"`
	Seed   int64  `json:"seed"`
	// Audit is what `skillgate audit` samples.
	Audit suite.Audit `json:"audit"`
	// RedactEnv names host variables whose values are never stored.
	RedactEnv []string `json:"redactEnv"`
	// Router is the suite's router skill, by key.
	Router string `json:"router,omitempty"`
}

// PlanAgent is the agent and the digest of every field that decides what
// it does in any cell. The forced-prompt template is part of the forced
// arms' digests instead, so changing it reruns only those.
type PlanAgent struct {
	suite.Agent
	Digest digest.Digest `json:"digest"`
	// Name is the agent's name in a suite on several agents.
	Name string `json:"name,omitempty"`
}

// PlanJudge is the judge and its identity digest.
type PlanJudge struct {
	suite.Judge
	Digest digest.Digest `json:"digest"`
}

// PlanLimits are the cell limits and their digest.
type PlanLimits struct {
	suite.Limits
	Digest digest.Digest `json:"digest"`
}

// PlanSkill is a skill with its tree.
type PlanSkill struct {
	suite.Skill
	Tree
}

// PlanArm is an arm and the digest of what it installs and how. The arms
// of a plan are as the suite wrote them; CaseArm gives an arm as it
// applies to one case's cells.
type PlanArm struct {
	Name string `json:"name"`
	suite.Arm
	// Forced, in an arm applied to a case (CaseArm) that installs the
	// case's targets, are the skills its prompt names: the targets.
	Forced []string      `json:"forced,omitempty"`
	Digest digest.Digest `json:"digest"`
}

// PlanCase is a case and the digests of its rollout inputs (prompt, seed,
// fixture, overlay, replies) and of its grading inputs (assertions,
// rubric, writes, routing).
type PlanCase struct {
	suite.Case
	FixtureDigest digest.Digest `json:"fixtureDigest,omitempty"`
	OverlayDigest digest.Digest `json:"overlayDigest,omitempty"`
	RolloutDigest digest.Digest `json:"rolloutDigest"`
	GradeDigest   digest.Digest `json:"gradeDigest"`

	// EnvironmentDigest is the digest of the environment its cells run in
	// (Case.Environment, the suite's default applied); CaseDirDigest its
	// case folder's tree.
	EnvironmentDigest digest.Digest `json:"environmentDigest,omitempty"`
	CaseDirDigest     digest.Digest `json:"caseDirDigest,omitempty"`
}

// Cell is one case × arm × trial: one container, one agent session.
type Cell struct {
	ID    string `json:"id"`
	Case  string `json:"case"`
	Arm   string `json:"arm"`
	Trial int    `json:"trial"`
	// Agent names the cell's agent in a plan on several agents.
	Agent string `json:"agent,omitempty"`
	// Rollout digests all that decides what the agent does.
	Rollout digest.Digest `json:"rollout"`
	// Grade digests the rollout plus all that decides the grade.
	Grade digest.Digest `json:"grade"`
	// Rerun numbers a same-tree rerun of the cell (see RerunCell); 0 for
	// the plan's own cells.
	Rerun int `json:"rerun,omitempty"`
}

// CellID names a cell in results, reports and on the command line.
func CellID(caseID, arm string, trial int) string {
	return caseID + "/" + arm + "/" + strconv.Itoa(trial)
}

// digestJSON is the digest of v's canonical JSON.
func DigestJSON(v any) digest.Digest {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", v, err)) // only plan types reach here
	}
	return digest.FromBytes(b)
}

// Compile turns a loaded suite into its plan: every case but the
// calibration-only ones.
func Compile(s *suite.Suite) (*Plan, error) { return CompileCases(s, nil) }

// CompileCases is Compile that also plans the calibration-only cases whose
// IDs selected names; other IDs in it change nothing.
func CompileCases(s *suite.Suite, selected []string) (*Plan, error) {
	if len(s.AgentOrder) > 1 {
		return compileAgents(s, selected)
	}
	rel, err := filepath.Rel(s.Root, s.Dir)
	if err != nil {
		return nil, fmt.Errorf("compile plan: %w", err)
	}
	p := &Plan{
		Format:   PlanFormat,
		Suite:    PlanSuite{Name: s.Name, Description: s.Description, Dir: filepath.ToSlash(rel), Trials: s.Trials, Seed: s.Seed, Audit: s.Audit, RedactEnv: s.RedactEnv, Router: s.Router},
		Policy:   s.Policy,
		Formats:  s.Formats,
		Skills:   map[string]PlanSkill{},
		Fixtures: map[string]Tree{},
	}
	p.Agent = PlanAgent{Agent: s.Agent, Digest: DigestJSON(AgentIdentity(s.Agent))}
	p.Limits = PlanLimits{Limits: s.Limits, Digest: DigestJSON(rolloutLimits(s.Limits))}
	if err := compileEnvironments(s, p); err != nil {
		return nil, err
	}
	if s.Judge != nil {
		// The judge's identity: its fields (templates included), the seed
		// of its A/B orders, and the layout of the packets it reads.
		j := *s.Judge
		j.Upstream, j.UpstreamEnv, j.UpstreamDefault, j.Auth, j.Headers = keyUpstream(j.Upstream, j.UpstreamDefault), "", "", "", nil
		p.Judge = &PlanJudge{Judge: *s.Judge, Digest: DigestJSON(struct {
			suite.Judge
			Seed    int64 `json:"seed"`
			Packets int   `json:"packets"`
		}{j, s.Seed, PacketFormat})}
	}
	for key, sk := range s.Skills {
		dir, err := s.Resolve(sk.Path)
		if err != nil {
			return nil, fmt.Errorf("compile plan: skill %s: %w", key, err)
		}
		t, err := HashLive(dir)
		if err != nil {
			return nil, fmt.Errorf("compile plan: skill %s: %w", key, err)
		}
		p.Skills[key] = PlanSkill{Skill: sk, Tree: t}
	}
	for _, name := range s.ArmOrder {
		arm := PlanArm{Name: name, Arm: s.Arms[name]}
		arm.Digest = armDigest(p, arm, nil)
		p.Arms = append(p.Arms, arm)
	}
	router := ""
	if s.Router != "" {
		router = p.Skills[s.Router].Name
	}
	for _, id := range s.CaseOrder {
		c := s.Cases[id]
		if c.Calibration && !slices.Contains(selected, id) {
			continue
		}
		pc := PlanCase{Case: c}
		if err := caseInputs(s, p, &pc); err != nil {
			return nil, err
		}
		for _, layer := range []struct {
			rel string
			dg  *digest.Digest
		}{{c.Fixture, &pc.FixtureDigest}, {c.Overlay, &pc.OverlayDigest}} {
			if layer.rel == "" {
				continue
			}
			key := path.Clean(layer.rel)
			t, ok := p.Fixtures[key]
			if !ok {
				dir, err := s.Resolve(layer.rel)
				if err != nil {
					return nil, fmt.Errorf("compile plan: case %s: %w", id, err)
				}
				if t, err = HashLive(dir); err != nil {
					return nil, fmt.Errorf("compile plan: case %s: %w", id, err)
				}
				p.Fixtures[key] = t
			}
			*layer.dg = t.Digest
		}
		if _, err := p.CaseTree(pc); err != nil {
			return nil, fmt.Errorf("compile plan: case %s: %w", id, err)
		}
		pc.RolloutDigest = caseRolloutDigest(pc, s.Agent, s.Limits)
		var rubricPass *float64
		if c.RubricPass != 1 {
			rubricPass = &c.RubricPass
		}
		pc.GradeDigest = DigestJSON(struct {
			Kind         string                   `json:"kind"`
			Safety       bool                     `json:"safety"`
			Routing      suite.Routing            `json:"routing"`
			Writes       *[]string                `json:"writes"`
			Assert       []suite.Assertion        `json:"assert"`
			Rubric       []string                 `json:"rubric"`
			RubricPass   *float64                 `json:"rubricPass,omitempty"`
			Router       string                   `json:"router,omitempty"`
			CaseDir      digest.Digest            `json:"caseDir,omitempty"`
			Environments map[string]digest.Digest `json:"environments,omitempty"`
		}{c.Kind, c.Safety, c.Routing, c.Writes, c.Assert, c.Rubric, rubricPass, router, pc.CaseDirDigest, checkEnvironments(p, pc)})
		p.Cases = append(p.Cases, pc)
	}
	p.Cells = make([]Cell, 0, len(p.Cases)*len(p.Arms)*s.Trials)
	var keys cellKeys
	for _, pc := range p.Cases {
		judged := p.Judge != nil && (len(pc.Rubric) > 0 || p.Judge.Mode == "pairwise")
		var judge digest.Digest
		if judged {
			judge = p.Judge.Digest
		}
		for _, arm := range p.Arms {
			arm := CaseArm(p, pc, arm)
			for trial := 1; trial <= s.Trials; trial++ {
				// The keys are the digests of rolloutKey and gradeKey.
				rollout := keys.rollout(p.Agent.Digest, p.Limits.Digest, arm.Digest, pc.RolloutDigest, trial)
				grade := keys.grade(rollout, pc.GradeDigest, judge)
				p.Cells = append(p.Cells, Cell{ID: CellID(pc.ID, arm.Name, trial), Case: pc.ID, Arm: arm.Name, Trial: trial, Rollout: rollout, Grade: grade})
			}
		}
	}
	p.Digest = p.ComputeDigest()
	return p, nil
}

// AgentIdentity is the part of an agent that decides what it does in
// every cell, which the agent digest covers: how the host reaches the
// provider is not (keyUpstream). The forced-prompt template is
// in the forced arms' digests, the resume command and session flags in the
// digests of cases with replies; the report flags count only when a report
// is asked for.
func AgentIdentity(a suite.Agent) suite.Agent {
	a.ForcedPrompt, a.Resume, a.SessionArgs = "", nil, nil
	if a.Report == nil {
		a.ReportArgs = nil
	}
	a.Upstream, a.UpstreamEnv, a.UpstreamDefault, a.Auth, a.Headers = keyUpstream(a.Upstream, a.UpstreamDefault), "", "", "", nil
	return a
}

// armDigest digests what an arm installs and how: for an arm applied to a
// case that installs its targets, forced names them.
func armDigest(p *Plan, arm PlanArm, forced []string) digest.Digest {
	type installed struct {
		Name   string        `json:"name"`
		Digest digest.Digest `json:"digest"`
	}
	in := struct {
		Skills       []installed `json:"skills"`
		Activation   string      `json:"activation,omitempty"`
		ForcedPrompt string      `json:"forcedPrompt,omitempty"`
		Targets      bool        `json:"targets,omitempty"`
		Forced       []string    `json:"forced,omitempty"`
		// Replicate is a replicate arm's own name: its cells install
		// what the original's do, under keys of their own.
		Replicate string `json:"replicate,omitempty"`
	}{Skills: []installed{}, Targets: arm.Targets}
	if arm.ReplicateOf != "" {
		in.Replicate = arm.Name
	}
	for _, key := range arm.Skills {
		in.Skills = append(in.Skills, installed{p.Skills[key].Name, p.Skills[key].Digest})
	}
	if len(arm.Skills) > 0 || arm.Targets {
		in.Activation = arm.Activation
		if arm.Activation == "forced" {
			in.ForcedPrompt = p.Agent.ForcedPrompt
		}
	}
	for _, key := range forced {
		in.Forced = append(in.Forced, p.Skills[key].Name)
	}
	return DigestJSON(in)
}

// CaseArm is arm as it applies to the cells of case pc. An arm with
// targets installs its own skills and then the case's targets (each skill
// once), and forces only the targets; its digest is that of this
// installation. Any other arm is returned as it is.
func CaseArm(p *Plan, pc PlanCase, arm PlanArm) PlanArm {
	if !arm.Targets {
		return arm
	}
	out := arm
	out.Skills = slices.Clone(arm.Skills)
	for _, key := range pc.Targets {
		if !slices.Contains(out.Skills, key) {
			out.Skills = append(out.Skills, key)
		}
	}
	out.Forced = slices.Clone(pc.Targets)
	out.Digest = armDigest(p, out, out.Forced)
	return out
}

// ArmSkills are the skills an arm installs in any of the plan's cases, in
// order: its own, then each case's targets.
func ArmSkills(p *Plan, arm PlanArm) []string {
	out := slices.Clone(arm.Skills)
	if !arm.Targets {
		return out
	}
	for _, pc := range p.Cases {
		for _, key := range pc.Targets {
			if !slices.Contains(out, key) {
				out = append(out, key)
			}
		}
	}
	return out
}

// UnionArm is an arm with targets made one that installs, in every cell,
// every skill it installs in any case (ArmSkills): what a check of the arm
// as a whole, such as calibration, runs. Any other arm is returned as it is.
func UnionArm(p *Plan, arm PlanArm) PlanArm {
	if !arm.Targets {
		return arm
	}
	out := arm
	out.Skills, out.Targets, out.Forced = ArmSkills(p, arm), false, nil
	out.Digest = armDigest(p, out, nil)
	return out
}

// keyUpstream is the base URL a rollout or grade key holds: the suite's
// own, else the provider's default. How the gateway reaches it (a base URL
// from the host, the credential's variable and header, extra headers)
// decides nothing the agent or the judge does, and moves no key.
func keyUpstream(upstream, def string) string {
	if upstream != "" {
		return upstream
	}
	return def
}

// computeDigest digests the plan's file, as Encode writes it, with its
// digest field empty. ReadPlan checks the file's own bytes the same way, so
// a plan written by an older skillgate still reads and any edit shows.
func (p *Plan) ComputeDigest() digest.Digest {
	q := *p
	q.Digest = ""
	h := digest.SHA256.Digester()
	if err := writePlan(h.Hash(), &q); err != nil {
		panic(fmt.Sprintf("encode plan: %v", err))
	}
	return h.Digest()
}

// digestField is the plan's own digest as its file holds it.
func digestField(d digest.Digest) []byte {
	return []byte("\n  \"digest\": \"" + string(d) + "\",\n")
}

// Encode writes the plan as indented canonical JSON.
func (p *Plan) Encode() []byte {
	var buf bytes.Buffer
	buf.Grow(4<<10 + 300*len(p.Cells))
	if err := writePlan(&buf, p); err != nil {
		panic(fmt.Sprintf("encode plan: %v", err))
	}
	return buf.Bytes()
}

// ReadPlan reads a plan file and checks its digest.
func ReadPlan(file string) (*Plan, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	return DecodePlan(file, b)
}

// DecodePlan decodes b, the bytes of the plan file file, and checks its
// digest, as ReadPlan does.
func DecodePlan(file string, b []byte) (*Plan, error) {
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("read plan %s: %w", file, err)
	}
	if p.Format != PlanFormat {
		return nil, fmt.Errorf("read plan %s: format %d, this skillgate reads format %d", file, p.Format, PlanFormat)
	}
	field := digestField(p.Digest)
	if p.Digest == "" || bytes.Count(b, field) != 1 || digest.FromBytes(bytes.Replace(b, field, digestField(""), 1)) != p.Digest {
		return nil, fmt.Errorf("read plan %s: content does not match its digest %s: edited, or damaged", file, p.Digest)
	}
	return &p, nil
}

// CompileDir loads and compiles the suite in dir.
func CompileDir(dir string) (*Plan, error) { return CompileDirCases(dir, nil) }

// CompileDirCases loads and compiles the suite in dir, planning the
// calibration-only cases selected names too (see CompileCases).
func CompileDirCases(dir string, selected []string) (*Plan, error) {
	s, err := suite.LoadSuite(dir)
	if err != nil {
		return nil, err
	}
	return CompileCases(s, selected)
}

// CheckCases refuses a case ID the plan does not hold, so a typo in a
// selection never plans nothing.
func (p *Plan) CheckCases(ids []string) error {
	for _, id := range ids {
		if !slices.ContainsFunc(p.Cases, func(pc PlanCase) bool { return pc.ID == id }) {
			return fmt.Errorf("select cases: the suite has no case %q", id)
		}
	}
	return nil
}

// CalibrationCases are the IDs of the calibration-only cases a plan holds:
// those it was compiled to run.
func (p *Plan) CalibrationCases() []string {
	var out []string
	for _, pc := range p.Cases {
		if pc.Calibration {
			out = append(out, pc.ID)
		}
	}
	return out
}

// PacketFormat versions the packets' layout and caps; it is part of the
// judge's identity (so of every judged grade key) and of every pairwise
// judgement key.
const PacketFormat = 2
