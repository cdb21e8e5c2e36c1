package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
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
	Judge  *PlanJudge    `json:"judge,omitempty"`
	Limits PlanLimits    `json:"limits"`
	Policy suite.Policy  `json:"policy"`
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
}

// PlanAgent is the agent and the digest of every field that decides what
// it does in any cell. The forced-prompt template is part of the forced
// arms' digests instead, so changing it reruns only those.
type PlanAgent struct {
	suite.Agent
	Digest digest.Digest `json:"digest"`
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

// PlanArm is an arm and the digest of what it installs and how.
type PlanArm struct {
	Name string `json:"name"`
	suite.Arm
	Digest digest.Digest `json:"digest"`
}

// PlanCase is a case and the digests of its rollout inputs (prompt, seed,
// fixture) and of its grading inputs (assertions, rubric, writes, routing).
type PlanCase struct {
	suite.Case
	FixtureDigest digest.Digest `json:"fixtureDigest,omitempty"`
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

// Compile turns a loaded suite into its plan.
func Compile(s *suite.Suite) (*Plan, error) {
	rel, err := filepath.Rel(s.Root, s.Dir)
	if err != nil {
		return nil, fmt.Errorf("compile plan: %w", err)
	}
	p := &Plan{
		Format:   PlanFormat,
		Suite:    PlanSuite{Name: s.Name, Description: s.Description, Dir: filepath.ToSlash(rel), Trials: s.Trials, Seed: s.Seed, Audit: s.Audit, RedactEnv: s.RedactEnv},
		Policy:   s.Policy,
		Skills:   map[string]PlanSkill{},
		Fixtures: map[string]Tree{},
	}
	agent := s.Agent
	forced := agent.ForcedPrompt
	agent.ForcedPrompt = ""
	p.Agent = PlanAgent{Agent: s.Agent, Digest: DigestJSON(agent)}
	p.Limits = PlanLimits{Limits: s.Limits, Digest: DigestJSON(rolloutLimits(s.Limits))}
	if err := compileEnvironments(s, p); err != nil {
		return nil, err
	}
	if s.Judge != nil {
		// The judge's identity: its fields (templates included), the seed
		// of its A/B orders, and the layout of the packets it reads.
		p.Judge = &PlanJudge{Judge: *s.Judge, Digest: DigestJSON(struct {
			suite.Judge
			Seed    int64 `json:"seed"`
			Packets int   `json:"packets"`
		}{*s.Judge, s.Seed, PacketFormat})}
	}
	for key, sk := range s.Skills {
		dir, err := s.Resolve(sk.Path)
		if err != nil {
			return nil, fmt.Errorf("compile plan: skill %s: %w", key, err)
		}
		t, err := HashTree(dir)
		if err != nil {
			return nil, fmt.Errorf("compile plan: skill %s: %w", key, err)
		}
		p.Skills[key] = PlanSkill{Skill: sk, Tree: t}
	}
	for _, name := range s.ArmOrder {
		arm := s.Arms[name]
		type installed struct {
			Name   string        `json:"name"`
			Digest digest.Digest `json:"digest"`
		}
		in := struct {
			Skills       []installed `json:"skills"`
			Activation   string      `json:"activation,omitempty"`
			ForcedPrompt string      `json:"forcedPrompt,omitempty"`
		}{Skills: []installed{}}
		for _, key := range arm.Skills {
			in.Skills = append(in.Skills, installed{p.Skills[key].Name, p.Skills[key].Digest})
		}
		if len(arm.Skills) > 0 {
			in.Activation = arm.Activation
			if arm.Activation == "forced" {
				in.ForcedPrompt = forced
			}
		}
		p.Arms = append(p.Arms, PlanArm{Name: name, Arm: arm, Digest: DigestJSON(in)})
	}
	for _, id := range s.CaseOrder {
		c := s.Cases[id]
		pc := PlanCase{Case: c}
		if err := caseInputs(s, p, &pc); err != nil {
			return nil, err
		}
		if c.Fixture != "" {
			key := path.Clean(c.Fixture)
			t, ok := p.Fixtures[key]
			if !ok {
				dir, err := s.Resolve(c.Fixture)
				if err != nil {
					return nil, fmt.Errorf("compile plan: case %s: %w", id, err)
				}
				if t, err = HashTree(dir); err != nil {
					return nil, fmt.Errorf("compile plan: case %s: %w", id, err)
				}
				p.Fixtures[key] = t
			}
			pc.FixtureDigest = t.Digest
		}
		pc.RolloutDigest = DigestJSON(struct {
			Prompt      string        `json:"prompt"`
			Seed        []suite.Turn  `json:"seed"`
			Fixture     digest.Digest `json:"fixture"`
			Environment digest.Digest `json:"environment,omitempty"`
			Setup       *setupKey     `json:"setup,omitempty"`
		}{c.Prompt, c.Seed, pc.FixtureDigest, pc.EnvironmentDigest, setupOf(pc, s.Limits)})
		pc.GradeDigest = DigestJSON(struct {
			Kind         string                   `json:"kind"`
			Safety       bool                     `json:"safety"`
			Routing      suite.Routing            `json:"routing"`
			Writes       *[]string                `json:"writes"`
			Assert       []suite.Assertion        `json:"assert"`
			Rubric       []string                 `json:"rubric"`
			CaseDir      digest.Digest            `json:"caseDir,omitempty"`
			Environments map[string]digest.Digest `json:"environments,omitempty"`
		}{c.Kind, c.Safety, c.Routing, c.Writes, c.Assert, c.Rubric, pc.CaseDirDigest, checkEnvironments(p, pc)})
		p.Cases = append(p.Cases, pc)
	}
	for _, pc := range p.Cases {
		judged := p.Judge != nil && (len(pc.Rubric) > 0 || p.Judge.Mode == "pairwise")
		for _, arm := range p.Arms {
			for trial := 1; trial <= s.Trials; trial++ {
				rollout := DigestJSON(struct {
					Agent  digest.Digest `json:"agent"`
					Limits digest.Digest `json:"limits"`
					Arm    digest.Digest `json:"arm"`
					Case   digest.Digest `json:"case"`
					Trial  int           `json:"trial"`
				}{p.Agent.Digest, p.Limits.Digest, arm.Digest, pc.RolloutDigest, trial})
				var judge digest.Digest
				if judged {
					judge = p.Judge.Digest
				}
				grade := DigestJSON(struct {
					Rollout digest.Digest `json:"rollout"`
					Case    digest.Digest `json:"case"`
					Judge   digest.Digest `json:"judge,omitempty"`
				}{rollout, pc.GradeDigest, judge})
				p.Cells = append(p.Cells, Cell{ID: CellID(pc.ID, arm.Name, trial), Case: pc.ID, Arm: arm.Name, Trial: trial, Rollout: rollout, Grade: grade})
			}
		}
	}
	p.Digest = p.ComputeDigest()
	return p, nil
}

// computeDigest digests the plan's file, as Encode writes it, with its
// digest field empty. ReadPlan checks the file's own bytes the same way, so
// a plan written by an older skillgate still reads and any edit shows.
func (p *Plan) ComputeDigest() digest.Digest {
	q := *p
	q.Digest = ""
	return digest.FromBytes(q.Encode())
}

// digestField is the plan's own digest as its file holds it.
func digestField(d digest.Digest) []byte {
	return []byte("\n  \"digest\": \"" + string(d) + "\",\n")
}

// Encode writes the plan as indented canonical JSON.
func (p *Plan) Encode() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
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
func CompileDir(dir string) (*Plan, error) {
	s, err := suite.LoadSuite(dir)
	if err != nil {
		return nil, err
	}
	return Compile(s)
}

// PacketFormat versions the packets' layout and caps; it is part of the
// judge's identity (so of every judged grade key) and of every pairwise
// judgement key.
const PacketFormat = 2
