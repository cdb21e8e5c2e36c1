package store

// Merge, phase 1 (open): each input run folder is read-locked, and a
// sharded run's shard folders are opened as inputs of their own.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

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
