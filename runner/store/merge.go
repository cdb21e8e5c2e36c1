package store

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/gateway"

	"github.com/opencontainers/go-digest"
)

// Parts of a merged run folder (see the package's doc, Merging run folders).
const (
	// FileMerge is the merge record: what was read, and what was decided.
	FileMerge = "merge.json"
	// DirSetAside keeps each version of a record that was not chosen.
	DirSetAside = "merge/set-aside"
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
// for the rules.
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
	// calibration chosen: its bytes, and the rollouts it pins.
	calibration []byte
	pinned      map[digest.Digest]digest.Digest
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

// open checks the output folder and the inputs' plans and shard records,
// and takes each input's lock, so no run writes into it meanwhile.
func (m *merger) open(out string, dirs []string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("merge run folders: %w", err)
	}
	m.out = abs
	seen := map[string]string{}
	var first string
	for _, d := range dirs {
		a, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("merge run folders: %w", err)
		}
		if a == abs {
			return fmt.Errorf("merge run folders: %s is both an input and the output", d)
		}
		if prev, ok := seen[a]; ok {
			return fmt.Errorf("merge run folders: %s and %s are the same folder", prev, d)
		}
		seen[a] = d
		if err := checkLinks(a); err != nil {
			return fmt.Errorf("verify %s: %w", d, err)
		}
		b, err := os.ReadFile(filepath.Join(a, FilePlan))
		if err != nil {
			return fmt.Errorf("merge run folders: %s: no plan.json: is it a run folder? %w", d, err)
		}
		p, err := plan.ReadPlan(filepath.Join(a, FilePlan))
		if err != nil {
			return fmt.Errorf("merge run folders: %s: %w", d, err)
		}
		if m.plan == nil {
			m.plan, m.planB, first = p, b, d
		} else if p.Digest != m.plan.Digest {
			return fmt.Errorf("merge run folders: %s holds a run of plan %s, %s of plan %s: "+
				"merge only run folders of one plan (run the same plan.json in every shard)", d, p.Digest, first, m.plan.Digest)
		}
		unlock, err := readLock(a, d)
		if err != nil {
			return err
		}
		m.unlocks = append(m.unlocks, unlock)
		in := &mergeInput{dir: d, abs: a, held: map[digest.Digest]digest.Digest{}, started: map[digest.Digest]time.Time{}}
		if rec, ok, err := readShardFile(filepath.Join(a, FileShard)); err != nil {
			return fmt.Errorf("merge run folders: %s: %w", d, err)
		} else if ok && rec.Plan == m.plan.Digest {
			in.shard = &rec
		}
		m.inputs = append(m.inputs, in)
		m.rec.Inputs = append(m.rec.Inputs, MergeInput{Dir: d, Shard: in.shard})
	}
	if entries, err := os.ReadDir(abs); err == nil && len(entries) > 0 {
		return fmt.Errorf("merge run folders: %s is not empty: merge into a new folder", out)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("merge run folders: %w", err)
	}
	m.rec.Plan = m.plan.Digest
	m.ix = indexPlan(m.plan)
	return m.mergeShards()
}

// mergeShards decides the merged folder's shard record: none when an input
// holds the whole plan or the inputs' shares cover it, else their union.
func (m *merger) mergeShards() error {
	var union *ShardRecord
	var from string
	for _, in := range m.inputs {
		if in.shard == nil {
			return nil // a whole-plan run folder: nothing is a share
		}
		if union == nil {
			union, from = &ShardRecord{Plan: m.plan.Digest, Count: in.shard.Count}, in.dir
		} else if in.shard.Count != union.Count {
			return fmt.Errorf("merge run folders: %s holds shards of %d, %s shards of %d: the shares of different counts overlap; merge the shards of one --shard I/N count",
				from, union.Count, in.dir, in.shard.Count)
		}
		for _, s := range in.shard.Shards {
			if !slices.Contains(union.Shards, s) {
				union.Shards = append(union.Shards, s)
			}
		}
	}
	slices.Sort(union.Shards)
	if len(union.Shards) < union.Count {
		m.rec.Shard = union
	}
	return nil
}

// readLock takes a shared lock on a run folder's lock, when it has one: a
// skillgate process running into it holds it exclusively.
func readLock(dir, name string) (func(), error) {
	f, err := OpenLock(dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock run folder %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock run folder %s: a skillgate run is using it: merge it once it ends", name)
		}
		return nil, fmt.Errorf("lock run folder %s: %w", name, err)
	}
	return func() { f.Close() }, nil
}

func (m *merger) unlock() {
	for _, u := range m.unlocks {
		u()
	}
}

// storeParts are the store's folders a merge reads, by kind; tmp is skipped.
var storeParts = map[string]string{
	"rollouts": KindRollout, "trees": KindTree, "grades": KindGrade,
	"packets": KindPacket, "judgements": KindJudgement, "judge-failures": KindJudgeFailure,
}

// recordPath is where a record of kind and key lives in a run folder.
func recordPath(kind, key string) string {
	switch kind {
	case KindRollout:
		return filepath.Join(DirRollouts, key)
	case KindTree:
		return filepath.Join(DirTrees, key)
	case KindGrade:
		return filepath.Join(DirGrades, key+".json")
	case KindPacket:
		return filepath.Join(DirPackets, key+".json")
	case KindJudgement:
		return filepath.Join(DirJudgements, key+".json")
	case KindJudgeFailure:
		return filepath.Join(DirJudgeFailures, key+".json")
	case KindExchangeBody:
		return filepath.Join(gateway.DirExchangeBodies, key)
	case KindExchangeLog:
		return filepath.Join(gateway.DirExchangeLogs, key)
	}
	return ""
}

// scan verifies and indexes every record of input i.
func (m *merger) scan(i int) error {
	in := m.inputs[i]
	top, err := os.ReadDir(in.abs)
	if err != nil {
		return fmt.Errorf("merge run folders: %w", err)
	}
	for _, e := range top {
		if e.Name() == "rejudged" {
			m.rec.NotMerged = append(m.rec.NotMerged, in.dir+"/rejudged: rejudgements are not merged; rejudge the merged folder (skillgate judge)")
		}
	}
	parts, err := os.ReadDir(filepath.Join(in.abs, "store"))
	if errors.Is(err, fs.ErrNotExist) {
		parts = nil
	} else if err != nil {
		return fmt.Errorf("merge run folders: %w", err)
	}
	// Rollouts first: the records derived from them are checked against them.
	slices.SortStableFunc(parts, func(a, b fs.DirEntry) int {
		rank := func(e fs.DirEntry) int {
			if e.Name() == "rollouts" {
				return 0
			}
			return 1
		}
		return cmp.Compare(rank(a), rank(b))
	})
	for _, part := range parts {
		name := part.Name()
		if name == "tmp" {
			continue
		}
		if name == "spend.jsonl" {
			if err := m.scanSpend(i); err != nil {
				return err
			}
			continue
		}
		if name == "exchanges" && part.IsDir() {
			if err := m.scanExchanges(i); err != nil {
				return err
			}
			continue
		}
		kind, ok := storeParts[name]
		if !ok || !part.IsDir() {
			return fmt.Errorf("verify %s: store/%s is no part of a run folder's store (see skillgate's runner/store): merge refuses what it cannot verify", in.dir, name)
		}
		entries, err := os.ReadDir(filepath.Join(in.abs, "store", name))
		if err != nil {
			return fmt.Errorf("verify %s: %w", in.dir, err)
		}
		for _, e := range entries {
			key := e.Name()
			if kind != KindRollout && kind != KindTree {
				var ok bool
				if key, ok = strings.CutSuffix(key, ".json"); !ok {
					return fmt.Errorf("verify %s: store/%s/%s: not a record (KEY.json)", in.dir, name, e.Name())
				}
			}
			if !isHexKey(key) {
				return fmt.Errorf("verify %s: store/%s/%s: not named by a key (64 hex digits)", in.dir, name, e.Name())
			}
			v, err := m.verify(i, kind, key)
			if err != nil {
				return fmt.Errorf("verify %s: %w", in.dir, err)
			}
			m.add(kind, key, i, v)
		}
	}
	if err := m.scanCalibration(i); err != nil {
		return err
	}
	return m.scanAudits(i)
}

// scanExchanges verifies and indexes input i's recorded exchanges: each
// body and log is named by the digest of its bytes, so equal names are
// equal records.
func (m *merger) scanExchanges(i int) error {
	in := m.inputs[i]
	for _, part := range []struct{ dir, kind string }{{gateway.DirExchangeBodies, KindExchangeBody}, {gateway.DirExchangeLogs, KindExchangeLog}} {
		entries, err := os.ReadDir(filepath.Join(in.abs, part.dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("verify %s: %w", in.dir, err)
		}
		for _, e := range entries {
			if !isHexKey(e.Name()) {
				return fmt.Errorf("verify %s: %s/%s: not named by a digest (64 hex digits)", in.dir, part.dir, e.Name())
			}
			src := filepath.Join(in.abs, part.dir, e.Name())
			b, err := readRegular(src)
			if err != nil {
				return fmt.Errorf("verify %s: %w", in.dir, err)
			}
			d := digest.FromBytes(b)
			if d.Encoded() != e.Name() {
				return fmt.Errorf("verify %s: %s/%s: its bytes have digest %s: altered or damaged", in.dir, part.dir, short(e.Name()), d)
			}
			m.add(part.kind, e.Name(), i, &mergeVersion{src: src, digest: d, valid: true})
		}
	}
	others, err := os.ReadDir(filepath.Join(in.abs, "store", "exchanges"))
	if err != nil {
		return fmt.Errorf("verify %s: %w", in.dir, err)
	}
	for _, e := range others {
		if e.Name() != "bodies" && e.Name() != "logs" {
			return fmt.Errorf("verify %s: store/exchanges/%s is no part of a run folder's store (see skillgate's runner/store): merge refuses what it cannot verify", in.dir, e.Name())
		}
	}
	return nil
}

func isHexKey(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// add files version v of a record under its key, joining an equal one.
func (m *merger) add(kind, key string, input int, v *mergeVersion) {
	id := kind + " " + key
	k := m.records[id]
	if k == nil {
		k = &mergeKey{kind: kind, key: key, asideWhy: map[*mergeVersion]string{}}
		m.records[id] = k
	}
	for _, o := range k.versions {
		if o.digest == v.digest {
			o.inputs = append(o.inputs, input)
			return
		}
	}
	v.inputs = []int{input}
	k.versions = append(k.versions, v)
}

// verify checks one record of input i against its key and returns its
// version.
func (m *merger) verify(i int, kind, key string) (*mergeVersion, error) {
	in := m.inputs[i]
	src := filepath.Join(in.abs, recordPath(kind, key))
	k := digest.NewDigestFromEncoded(digest.SHA256, key)
	switch kind {
	case KindRollout:
		return m.verifyRollout(in, src, k)
	case KindTree:
		t, err := plan.HashTree(src)
		if err != nil {
			return nil, fmt.Errorf("tree %s: %w", short(key), err)
		}
		if t.Digest != k {
			return nil, fmt.Errorf("tree %s: its files have digest %s, not the one it is named by: altered or damaged", short(key), t.Digest)
		}
		return &mergeVersion{src: src, dir: true, digest: t.Digest, valid: true}, nil
	}
	b, err := readRegular(src)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, short(key), err)
	}
	v := &mergeVersion{src: src, digest: digest.FromBytes(b), valid: true}
	switch kind {
	case KindGrade:
		var r grade.CellResult
		if err := unseal(recordPath(kind, key), b, &r); err != nil {
			return nil, fmt.Errorf("grade %s: %w", short(key), err)
		}
		if r.Grade != k {
			return nil, fmt.Errorf("grade %s (%s): it records grade key %s, not the one it is named by: altered or damaged", short(key), r.Cell, r.Grade)
		}
		if want, ok := m.ix.grades[k]; ok && r.Rollout != want {
			return nil, fmt.Errorf("grade %s (%s): it grades rollout %s; the plan's cells of this grade key run rollout %s: altered or damaged", short(key), r.Cell, r.Rollout, want)
		}
		v.valid = r.Status != StatusInvalid || r.Judge != nil
		v.deps = []digest.Digest{r.Rollout}
	case KindJudgement:
		var j Judgement
		if err := unseal(recordPath(kind, key), b, &j); err != nil {
			return nil, fmt.Errorf("judgement %s: %w", short(key), err)
		}
		if j.Key != key {
			return nil, fmt.Errorf("judgement %s: it records key %s, not the one it is named by: altered or damaged", short(key), short(j.Key))
		}
		if err := m.verifyJudgement(&j); err != nil {
			return nil, fmt.Errorf("judgement %s (%s): %w", short(key), strings.Join(j.Cells, ", "), err)
		}
		v.valid = j.Error == ""
		v.deps = m.ix.deps[key]
	case KindPacket:
		if !json.Valid(b) {
			return nil, fmt.Errorf("packet %s: not JSON: altered or damaged", short(key))
		}
		v.deps = m.ix.deps[key]
	case KindJudgeFailure:
		var f JudgeFailure
		if err := unseal(recordPath(kind, key), b, &f); err != nil {
			return nil, fmt.Errorf("judge failure %s: %w", short(key), err)
		}
		if f.Key != key {
			return nil, fmt.Errorf("judge failure %s: it records key %s, not the one it is named by: altered or damaged", short(key), short(f.Key))
		}
		v.valid = false
		v.deps = m.ix.deps[key]
	}
	return v, nil
}

// verifyJudgement checks that a judgement under one of the plan's judge
// keys is of the cells the key names, by the plan's judge.
func (m *merger) verifyJudgement(j *Judgement) error {
	if !m.ix.judged[j.Key] {
		return nil // of another plan: only its own key is checked
	}
	pj := m.plan.Judge
	if pj == nil || j.Judge != pj.Digest {
		return fmt.Errorf("judged by %s, not the plan's judge: altered or damaged", j.Judge)
	}
	var grades []digest.Digest
	for _, id := range j.Cells {
		c, ok := m.ix.cells[id]
		if !ok {
			return fmt.Errorf("names cell %s, which the plan lacks: altered or damaged", id)
		}
		grades = append(grades, c.Grade)
	}
	var want digest.Digest
	switch {
	case j.Mode == "pairwise" && len(grades) == 2:
		want = grade.PairwiseKey(grades[0], grades[1], j.Judge, j.Position)
	case j.Mode != "pairwise" && len(grades) == 1 && j.Role == RoleAdjudicator:
		want = grade.AdjudicationKey(grades[0])
	case j.Mode != "pairwise" && len(grades) == 1:
		want = grades[0]
	default:
		return fmt.Errorf("a %s judgement of %d cells: altered or damaged", j.Mode, len(grades))
	}
	if want.Encoded() != j.Key {
		return fmt.Errorf("its cells give key %s, not the one it is stored under: altered or damaged", short(want.Encoded()))
	}
	return nil
}

// verifyRollout checks a stored rollout: its record names its key, every
// changed file is stored under its content's digest, the answer file is
// the answer, and, under a key of the plan, it ran the plan's trees.
func (m *merger) verifyRollout(in *mergeInput, dir string, key digest.Digest) (*mergeVersion, error) {
	name := "rollout " + short(key.Encoded())
	var r Rollout
	if _, err := readSealed(filepath.Join(dir, FileRollout), &r); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	name += " (" + r.Cell + ")"
	if r.Key != key {
		return nil, fmt.Errorf("%s: it records key %s, not the one it is named by: altered or damaged", name, r.Key)
	}
	if err := verifyRolloutFiles(dir, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t, err := plan.HashTree(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if cells := m.ix.rollouts[key]; len(cells) > 0 {
		if err := m.verifyInputs(&r, cells[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	in.held[key] = t.Digest
	in.started[key] = r.StartedAt
	return &mergeVersion{src: dir, dir: true, digest: t.Digest, valid: r.Status != StatusInvalid, started: r.StartedAt}, nil
}

// verifyInputs checks that a rollout under a key of cell c ran c's trees.
func (m *merger) verifyInputs(r *Rollout, c plan.Cell) error {
	pc, arm := m.ix.cases[c.Case], m.ix.arms[c.Arm]
	if r.Inputs.Fixture != "" && r.Inputs.Fixture != pc.FixtureDigest {
		return fmt.Errorf("it ran fixture %s; its key's cell %s has fixture %s: altered or damaged", r.Inputs.Fixture, c.ID, pc.FixtureDigest)
	}
	if r.Inputs.Skills == nil {
		return nil
	}
	var got, want []string
	for _, s := range r.Inputs.Skills {
		got = append(got, s.Digest.String())
	}
	for _, k := range arm.Skills {
		want = append(want, m.plan.Skills[k].Digest.String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("it ran skills %v; its key's cell %s installs %v: altered or damaged", got, c.ID, want)
	}
	return nil
}

// scanCalibration reads input i's calibration of the plan, whose every
// check must name a rollout the input holds.
func (m *merger) scanCalibration(i int) error {
	in := m.inputs[i]
	file := filepath.Join(in.abs, FileCalibration)
	b, err := readRegular(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("verify %s: %w", in.dir, err)
	}
	rec, err := unsealCalibration(file, b)
	if err != nil {
		return fmt.Errorf("verify %s: %w", in.dir, err)
	}
	if rec.Plan != m.plan.Digest {
		m.rec.NotMerged = append(m.rec.NotMerged, in.dir+"/"+FileCalibration+": of another plan")
		return nil
	}
	for _, ch := range rec.Checks {
		if _, ok := in.held[ch.Rollout]; !ok {
			return fmt.Errorf("verify %s: %s: check %s in arm %s names rollout %s, which the folder does not hold: altered or damaged",
				in.dir, FileCalibration, ch.Check, ch.Arm, short(ch.Rollout.Encoded()))
		}
		in.calChecks = append(in.calChecks, ch.Rollout)
	}
	in.calibration = b
	return nil
}

// scanSpend reads and checks input i's spend ledger.
func (m *merger) scanSpend(i int) error {
	in := m.inputs[i]
	entries, err := ReadSpend(in.abs)
	if err != nil {
		return fmt.Errorf("verify %s: %w", in.dir, err)
	}
	if m.spend == nil {
		m.spend = map[string]SpendEntry{}
	}
	for n, e := range entries {
		switch {
		case e.Kind != SpendCell && e.Kind != SpendCalibration && e.Kind != SpendJudge:
			err = fmt.Errorf("kind %q", e.Kind)
		case e.ID == "":
			err = errors.New("no cell or judgement named")
		case math.IsNaN(e.USD) || math.IsInf(e.USD, 0) || e.USD < 0:
			err = fmt.Errorf("amount %v", e.USD)
		case e.Time.IsZero():
			err = errors.New("no time")
		}
		if err != nil {
			return fmt.Errorf("verify %s: spend ledger entry %d: %w: altered or damaged", in.dir, n+1, err)
		}
		line, _ := json.Marshal(e)
		m.spend[string(line)] = e
	}
	return nil
}

// scanAudits reads input i's audit ledger, whose every decision must name a
// cell of the plan.
func (m *merger) scanAudits(i int) error {
	in := m.inputs[i]
	f, err := os.Open(filepath.Join(in.abs, grade.FileAuditLedger))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("verify %s: %w", in.dir, err)
	}
	defer f.Close()
	if m.audits == nil {
		m.audits = map[string]grade.AuditDecision{}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var d grade.AuditDecision
		err := json.Unmarshal(sc.Bytes(), &d)
		if err == nil {
			var c, a string
			var t int
			if c, a, t, err = grade.ParseAuditID(d.ID); err == nil {
				if _, ok := m.ix.cells[plan.CellID(c, a, t)]; !ok {
					err = fmt.Errorf("%s names no cell of the plan", d.ID)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("verify %s: %s:%d: %w", in.dir, grade.FileAuditLedger, n, err)
		}
		line, _ := json.Marshal(d)
		m.audits[string(line)] = d
	}
	return sc.Err()
}

// Rules a merge decides by, as the merge record says them.
const (
	ruleValid  = "a valid record over an invalid one"
	ruleFirst  = "the rollout that started first"
	ruleDigest = "the lowest content digest"
	// RuleCalibration: a calibration rollout goes with the calibration
	// chosen, which read it.
	RuleCalibration      = "follows the chosen calibration"
	ruleCalibrationFirst = "the calibration that started first"
	ruleFollows          = "follows rollout %s, whose version it was not made from"
)

// decide chooses one version of every key: calibration first, whose
// rollouts go with it; then rollouts; then what derives from them.
func (m *merger) decide() error {
	m.pinned = map[digest.Digest]digest.Digest{}
	var cands []int
	for i, in := range m.inputs {
		if in.calibration != nil {
			cands = append(cands, i)
		}
	}
	if len(cands) > 0 {
		calStart := func(i int) time.Time {
			var t time.Time
			for _, k := range m.inputs[i].calChecks {
				if s := m.inputs[i].started[k]; t.IsZero() || s.Before(t) {
					t = s
				}
			}
			return t
		}
		// One version per input: its calibration.json with the versions
		// of the rollouts it read, which go with it.
		versions := map[digest.Digest]*mergeVersion{}
		var order []*mergeVersion
		for _, i := range cands {
			in := m.inputs[i]
			var group bytes.Buffer
			group.Write(in.calibration)
			for _, r := range in.calChecks {
				fmt.Fprintf(&group, "\n%s %s", r, in.held[r])
			}
			d := digest.FromBytes(group.Bytes())
			if v := versions[d]; v != nil {
				v.inputs = append(v.inputs, i)
				continue
			}
			v := &mergeVersion{inputs: []int{i}, digest: d, valid: true, started: calStart(i), src: filepath.Join(in.abs, FileCalibration)}
			versions[d] = v
			order = append(order, v)
		}
		k := &mergeKey{kind: KindCalibration, key: FileCalibration, versions: order, asideWhy: map[*mergeVersion]string{}}
		choose(k, true)
		if k.rule == ruleFirst {
			k.rule = ruleCalibrationFirst
		}
		m.records["calibration"] = k
		chosen := m.inputs[k.chosen.inputs[0]]
		m.calibration = chosen.calibration
		for _, r := range chosen.calChecks {
			m.pinned[r] = chosen.held[r]
		}
	}
	for _, kind := range []string{KindTree, KindExchangeBody, KindExchangeLog} {
		for _, k := range m.sorted(kind) {
			choose(k, false) // one version: its bytes give its key
		}
	}
	winner := map[digest.Digest]digest.Digest{}
	for _, k := range m.sorted(KindRollout) {
		rk := digest.NewDigestFromEncoded(digest.SHA256, k.key)
		if pin, ok := m.pinned[rk]; ok && len(k.versions) > 1 {
			for _, v := range k.versions {
				if v.digest == pin {
					k.chosen = v
				} else {
					k.aside = append(k.aside, v)
				}
			}
			k.rule = RuleCalibration
		} else {
			choose(k, true)
		}
		winner[rk] = k.chosen.digest
	}
	for _, kind := range []string{KindGrade, KindPacket, KindJudgement, KindJudgeFailure} {
		for _, k := range m.sorted(kind) {
			var eligible []*mergeVersion
			for _, v := range k.versions {
				if why := m.stale(v, winner); why != "" {
					k.aside = append(k.aside, v)
					k.asideWhy[v] = why
					continue
				}
				eligible = append(eligible, v)
			}
			followed := len(k.aside) > 0
			aside := k.aside
			k.versions, k.aside = eligible, nil
			if len(eligible) > 0 {
				choose(k, false)
			}
			k.aside = append(k.aside, aside...)
			if followed && k.rule == "" {
				k.rule = k.asideWhy[aside[0]]
			}
		}
	}
	// A judgement stored clears the failures of its key, as a run does.
	for _, k := range m.sorted(KindJudgeFailure) {
		if j := m.records[KindJudgement+" "+k.key]; j != nil && j.chosen != nil {
			k.chosen, k.aside = nil, nil
		}
	}
	return nil
}

// stale says why version v derives from a rollout version other than the
// chosen one ("" when it does not): every input holding it holds another
// version of a rollout it was made from.
func (m *merger) stale(v *mergeVersion, winner map[digest.Digest]digest.Digest) string {
	for _, d := range v.deps {
		w, ok := winner[d]
		if !ok {
			continue
		}
		fresh := false
		for _, i := range v.inputs {
			if h, held := m.inputs[i].held[d]; !held || h == w {
				fresh = true
			}
		}
		if !fresh {
			return fmt.Sprintf(ruleFollows, short(d.Encoded()))
		}
	}
	return ""
}

// choose picks k's version by the rules, in order: a valid one over an
// invalid one; for rollouts, the one that started first; the lowest
// content digest. The rule is the first that told the chosen one from the
// next.
func choose(k *mergeKey, byStart bool) {
	if len(k.versions) == 1 {
		k.chosen = k.versions[0]
		return
	}
	vs := slices.Clone(k.versions)
	rule := func(a, b *mergeVersion) (int, string) {
		if a.valid != b.valid {
			if a.valid {
				return -1, ruleValid
			}
			return 1, ruleValid
		}
		if byStart && !a.started.Equal(b.started) {
			return a.started.Compare(b.started), ruleFirst
		}
		return strings.Compare(a.digest.String(), b.digest.String()), ruleDigest
	}
	slices.SortFunc(vs, func(a, b *mergeVersion) int { d, _ := rule(a, b); return d })
	k.chosen = vs[0]
	_, k.rule = rule(vs[0], vs[1])
	k.aside = append(k.aside, vs[1:]...)
}

// sorted is every key of kind, by key.
func (m *merger) sorted(kind string) []*mergeKey {
	var out []*mergeKey
	for _, k := range m.records {
		if k.kind == kind {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b *mergeKey) int { return strings.Compare(a.key, b.key) })
	return out
}

// write lays the merged folder out beside out, then renames it into place,
// so a failed merge leaves nothing where a run would trust it.
func (m *merger) write() error {
	parent := filepath.Dir(m.out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("write merged run folder: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(m.out)+".merge-")
	if err != nil {
		return fmt.Errorf("write merged run folder: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("write merged run folder: %w", err)
	}
	for _, d := range []string{DirRollouts, DirTmp} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			return fmt.Errorf("write merged run folder: %w", err)
		}
	}
	put := func(rel string, b []byte) error {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tmp, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, rel), b, 0o644)
	}
	if err := put(FilePlan, m.planB); err != nil {
		return fmt.Errorf("write merged run folder: %w", err)
	}
	for _, kind := range []string{KindRollout, KindTree, KindGrade, KindPacket, KindJudgement, KindJudgeFailure, KindCalibration, KindExchangeBody, KindExchangeLog} {
		keys := m.sorted(kind)
		if kind == KindCalibration {
			keys = nil
			if k := m.records["calibration"]; k != nil {
				keys = []*mergeKey{k}
			}
		}
		for _, k := range keys {
			if k.chosen != nil {
				rel := recordPath(kind, k.key)
				if kind == KindCalibration {
					rel = FileCalibration
				}
				if err := m.copyVersion(kind, k.chosen, filepath.Join(tmp, rel)); err != nil {
					return fmt.Errorf("write merged run folder: %s %s: %w", kind, short(k.key), err)
				}
				m.rec.Records[kind]++
			}
			if len(k.aside) == 0 {
				continue
			}
			dup := MergeDuplicate{Kind: kind, Key: k.key, Rule: k.rule, SetAside: []MergeVersion{}}
			if k.chosen != nil {
				dup.Chosen = MergeVersion{Inputs: k.chosen.inputs, Digest: k.chosen.digest}
			}
			for _, v := range k.aside {
				rel := filepath.Join(DirSetAside, kind, k.key, v.digest.Encoded()[:16], filepath.Base(v.src))
				if err := m.copyVersion(kind, v, filepath.Join(tmp, rel)); err != nil {
					return fmt.Errorf("write merged run folder: %s %s: %w", kind, short(k.key), err)
				}
				dup.SetAside = append(dup.SetAside, MergeVersion{Inputs: v.inputs, Digest: v.digest, Path: filepath.ToSlash(rel)})
			}
			m.rec.Duplicates = append(m.rec.Duplicates, dup)
		}
	}
	if len(m.spend) > 0 {
		if err := put(filepath.FromSlash(FileSpend), ledger(m.spend, func(e SpendEntry) time.Time { return e.Time })); err != nil {
			return fmt.Errorf("write merged run folder: %w", err)
		}
		m.rec.Spend = len(m.spend)
	}
	if len(m.audits) > 0 {
		if err := put(grade.FileAuditLedger, ledger(m.audits, func(d grade.AuditDecision) time.Time { return d.Time })); err != nil {
			return fmt.Errorf("write merged run folder: %w", err)
		}
		m.rec.Audits = len(m.audits)
	}
	if m.rec.Shard != nil {
		b, _ := json.MarshalIndent(m.rec.Shard, "", "  ")
		if err := put(FileShard, append(b, '\n')); err != nil {
			return fmt.Errorf("write merged run folder: %w", err)
		}
	}
	b, err := json.MarshalIndent(m.rec, "", "  ")
	if err == nil {
		err = put(FileMerge, append(b, '\n'))
	}
	if err != nil {
		return fmt.Errorf("write merged run folder: %w", err)
	}
	os.Remove(m.out) // an empty folder, checked when the merge began
	if err := os.Rename(tmp, m.out); err != nil {
		return fmt.Errorf("write merged run folder: %w", err)
	}
	done = true
	return nil
}

// ledger renders a ledger's lines in time order, then by line.
func ledger[T any](lines map[string]T, at func(T) time.Time) []byte {
	keys := make([]string, 0, len(lines))
	for l := range lines {
		keys = append(keys, l)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if d := at(lines[a]).Compare(at(lines[b])); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var b bytes.Buffer
	for _, l := range keys {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// copyVersion copies a verified version to dst and checks the copy is what
// was verified: a file changed since is an error, never a merged record. A
// calibration's version is its input's calibration.json, read at the scan.
func (m *merger) copyVersion(kind string, v *mergeVersion, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if kind == KindCalibration {
		return os.WriteFile(dst, m.inputs[v.inputs[0]].calibration, 0o644)
	}
	if !v.dir {
		b, err := readRegular(v.src)
		if err != nil {
			return err
		}
		if digest.FromBytes(b) != v.digest {
			return fmt.Errorf("%s changed while it was merged", v.src)
		}
		return os.WriteFile(dst, b, 0o644)
	}
	err := filepath.WalkDir(v.src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(v.src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		default:
			return copyFile(p, to, info.Mode().Perm())
		}
	})
	if err != nil {
		return err
	}
	t, err := plan.HashTree(dst)
	if err != nil {
		return err
	}
	if t.Digest != v.digest {
		return fmt.Errorf("%s changed while it was merged", v.src)
	}
	return nil
}

// copyFile copies a file, keeping its permissions (a tree snapshot's files
// are read-only, an executable stays one).
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// short is a key's first 12 hex digits, for messages.
func short(key string) string {
	key = strings.TrimPrefix(key, "sha256:")
	if len(key) > 12 {
		return key[:12]
	}
	return key
}
