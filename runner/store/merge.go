package store

import (
	"errors"
	"slices"
	"time"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/runfolder"

	"github.com/opencontainers/go-digest"
)

// Parts of a merged run folder (see the package's doc, Merging run folders).
const (
	// FileMerge is the merge record: what was read, and what was decided.
	FileMerge = runfolder.FileMerge
	// DirSetAside keeps each version of a record that was not chosen.
	DirSetAside = runfolder.DirSetAside
)

// Kinds of merged records, as the merge record names them.
const (
	KindRollout      = "rollout"
	KindTree         = "tree"
	KindGrade        = "grade"
	KindPacket       = "packet"
	KindJudgement    = "judgement"
	KindJudgeFailure = "judge-failure"
	KindCalibration  = "calibration"
	// KindExchangeBody and KindExchangeLog are recorded model exchanges
	// (gateway's record.go), named by the digest of their bytes.
	KindExchangeBody = "exchange-body"
	KindExchangeLog  = "exchange-log"
)

// MergeRecord is merge.json: the run folders a merge read, what it took of
// each kind, and every key it found stored with different content, with
// the version it chose, by which rule, and where the others are kept.
type MergeRecord struct {
	Plan   digest.Digest `json:"plan"`
	Inputs []MergeInput  `json:"inputs"`
	// Shard is the shares the merged folder holds, when they are not all
	// of the plan's.
	Shard *ShardRecord `json:"shard,omitempty"`
	// Records counts the merged records by kind; Spend and Audits the
	// lines of the spend and audit ledgers.
	Records map[string]int `json:"records"`
	Spend   int            `json:"spend"`
	Audits  int            `json:"audits"`
	// Reused counts the entries of reused.json carried for the rollouts
	// taken.
	Reused int `json:"reused,omitempty"`
	// Duplicates are the keys stored with different content.
	Duplicates []MergeDuplicate `json:"duplicates"`
	// NotMerged says what of the inputs the merge leaves out, and why.
	NotMerged []string `json:"notMerged,omitempty"`
}

// MergeInput is one run folder a merge read.
type MergeInput struct {
	Dir   string       `json:"dir"`
	Shard *ShardRecord `json:"shard,omitempty"`
}

// MergeDuplicate is one key stored with different content.
type MergeDuplicate struct {
	Kind string `json:"kind"`
	Key  string `json:"key"`
	// Rule is the rule that chose.
	Rule     string         `json:"rule"`
	Chosen   MergeVersion   `json:"chosen"`
	SetAside []MergeVersion `json:"setAside"`
}

// MergeVersion is one content of a key, and the inputs (by index) that
// hold it.
type MergeVersion struct {
	Inputs []int         `json:"inputs"`
	Digest digest.Digest `json:"digest"`
	// Path is where a set-aside version is kept, in the merged folder.
	Path string `json:"path,omitempty"`
}

// Merge unions the run folders dirs, each of one plan, into the new run
// folder out (absent or empty), verifying every record against its key as
// it goes: a record that fails, or a folder of another plan, stops the merge
// before out exists. It writes the plan, the store, the calibration, the
// ledgers, the shard record when shares are missing, and merge.json; not
// the reports, which Report then builds from them. See the package's doc
// for the rules. It runs in five phases, a file each: open (merge_open.go),
// scan (merge_scan.go), verify (merge_verify.go), decide (merge_decide.go)
// and write (merge_write.go).
func Merge(out string, dirs []string) (*MergeRecord, error) {
	if len(dirs) == 0 {
		return nil, errors.New("merge run folders: no run folder to merge")
	}
	m := &merger{rec: &MergeRecord{Records: map[string]int{}, Duplicates: []MergeDuplicate{}}, records: map[string]*mergeKey{}}
	defer m.unlock()
	if err := m.open(out, dirs); err != nil {
		return nil, err
	}
	for i := range m.inputs {
		if err := m.scan(i); err != nil {
			return nil, err
		}
	}
	if err := m.decide(); err != nil {
		return nil, err
	}
	if err := m.write(); err != nil {
		return nil, err
	}
	return m.rec, nil
}

// merger holds a merge in progress.
type merger struct {
	out    string
	plan   *plan.Plan
	planB  []byte
	inputs []*mergeInput
	ix     planIndex
	rec    *MergeRecord
	// records by kind and key; order keeps them sorted for the writes.
	records map[string]*mergeKey
	spend   map[string]SpendEntry
	audits  map[string]grade.AuditDecision
	unlocks []func()
	// calibration chosen: its bytes. pinned are the rollouts the chosen
	// calibration and reuse sentinels bring with them.
	calibration []byte
	pinned      map[digest.Digest]mergePin
}

// mergePin is the version of a rollout the merge must choose, and why.
type mergePin struct {
	digest digest.Digest
	rule   string
}

// mergeInput is one run folder being merged.
type mergeInput struct {
	dir   string // as given
	abs   string
	shard *ShardRecord
	// held is the digest of every rollout version the input holds, by key.
	held map[digest.Digest]digest.Digest
	// started is when each of its rollouts started, by key.
	started     map[digest.Digest]time.Time
	calibration []byte
	calChecks   []digest.Digest
	// reused is its reused.json, by key (merge_reused.go).
	reused map[digest.Digest]Reused
	// sentinels is its reuse-sentinels.json (merge_sentinels.go).
	sentinels *inputSentinels
}

// mergeKey is every version of one record found in the inputs.
type mergeKey struct {
	kind, key string
	versions  []*mergeVersion
	chosen    *mergeVersion
	rule      string
	aside     []*mergeVersion
	asideWhy  map[*mergeVersion]string
}

// mergeVersion is one content of a record, in the inputs that hold it.
type mergeVersion struct {
	inputs []int
	src    string // the first input's file or folder
	dir    bool
	digest digest.Digest
	// valid: not an invalid rollout or grade, not a failed judgement.
	valid   bool
	started time.Time
	// deps are the rollout keys the record derives from.
	deps []digest.Digest
}

// planIndex is what the merge needs to know of the plan's keys.
type planIndex struct {
	cells map[string]plan.Cell // by ID, reruns included
	// rollouts: the cells (reruns included) of each rollout key.
	rollouts map[digest.Digest][]plan.Cell
	// grades: the rollout key of each grade key.
	grades map[digest.Digest]digest.Digest
	// deps: the rollout keys each judge key (grade, adjudication and
	// pairwise keys, in hex) derives from.
	deps   map[string][]digest.Digest
	cases  map[string]plan.PlanCase
	arms   map[string]plan.PlanArm
	judged map[string]bool // judge keys of the plan
}

func indexPlan(p *plan.Plan) planIndex {
	ix := planIndex{cells: map[string]plan.Cell{}, rollouts: map[digest.Digest][]plan.Cell{}, grades: map[digest.Digest]digest.Digest{},
		deps: map[string][]digest.Digest{}, cases: map[string]plan.PlanCase{}, arms: map[string]plan.PlanArm{}, judged: map[string]bool{}}
	for _, pc := range p.Cases {
		ix.cases[pc.ID] = pc
	}
	for _, a := range p.Arms {
		ix.arms[a.Name] = a
	}
	cells := slices.Clone(p.Cells)
	for n := 1; n <= p.Policy.RerunRed; n++ {
		for _, c := range p.Cells {
			cells = append(cells, plan.RerunCell(c, n))
		}
	}
	for _, c := range cells {
		ix.cells[c.ID] = c
		ix.rollouts[c.Rollout] = append(ix.rollouts[c.Rollout], c)
		ix.grades[c.Grade] = c.Rollout
		ix.deps[c.Grade.Encoded()] = []digest.Digest{c.Rollout}
		ix.deps[grade.AdjudicationKey(c.Grade).Encoded()] = []digest.Digest{c.Rollout}
	}
	if p.Judge != nil && p.Judge.Mode == "pairwise" {
		for _, pc := range p.Cases {
			for trial := 1; trial <= p.Suite.Trials; trial++ {
				for _, pair := range p.Judge.Pairs {
					cand, okC := ix.cells[plan.CellID(pc.ID, pair.Candidate, trial)]
					base, okB := ix.cells[plan.CellID(pc.ID, pair.Baseline, trial)]
					if !okC || !okB {
						continue
					}
					first := grade.PairwiseOrder(p.Suite.Seed, pc.ID, trial, pair)
					for _, pos := range []string{first, grade.OtherPosition(first)} {
						ix.deps[grade.PairwiseKey(cand.Grade, base.Grade, p.Judge.Digest, pos).Encoded()] = []digest.Digest{cand.Rollout, base.Rollout}
					}
				}
			}
		}
	}
	for k := range ix.deps {
		ix.judged[k] = true
	}
	return ix
}
