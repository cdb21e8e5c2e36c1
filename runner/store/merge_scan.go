package store

// Merge, phase 2 (scan): every record of every input is listed by kind
// and key, verified, and indexed with the input it came from; calibration,
// spend and audit ledgers are read line by line.

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/gateway"

	"github.com/opencontainers/go-digest"
)

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
	if err := m.scanReused(i); err != nil {
		return err
	}
	if err := m.scanSentinels(i); err != nil {
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
