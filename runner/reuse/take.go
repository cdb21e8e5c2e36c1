package reuse

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// FileLedger lists, in a run folder, the rollouts taken from elsewhere.
const FileLedger = store.FileReused

// Taken is one rollout taken into the run folder: an entry of its ledger
// (merge carries them, runner/store).
type Taken = store.Reused

// Result is what Take did.
type Result struct {
	From  string
	Taken []Taken
	// Refused names the records that failed verification, with why.
	Refused []string
	// SavedUSD is what the taken rollouts' model calls cost when they ran
	// (priced ones only), SavedSeconds their cells' time: what reusing
	// them saves.
	SavedUSD     float64
	SavedSeconds float64
	// Costs is each taken rollout's share of those, by key.
	Costs map[digest.Digest]Cost
}

// Cost is what a taken rollout cost when it ran: its priced model calls
// (0 when none was priced) and its cell's time.
type Cost struct {
	USD, Seconds float64
}

// Take copies into st the valid rollouts stored in from (a run folder or
// a pack) under the keys of cells that st lacks, each verified first, and
// records them in st's ledger. With dryRun it verifies and counts them,
// and writes nothing.
func Take(from string, st *store.Store, p *plan.Plan, cells []plan.Cell, dryRun bool) (*Result, error) {
	return TakeFrom(Source{From: from}, st, p, cells, dryRun)
}

// TakeFrom is Take from src, which may be the machine's cache. A nil st is
// an empty run folder (plan --reuse asks what a fresh folder would take).
func TakeFrom(src Source, st *store.Store, p *plan.Plan, cells []plan.Cell, dryRun bool) (*Result, error) {
	o, err := src.open(dryRun)
	if err != nil {
		return nil, err
	}
	defer o.close()
	res := &Result{From: src.From}
	cases, arms := p.CasesByID(), p.ArmsByName()
	seen := map[digest.Digest]bool{}
	now := time.Now().UTC()
	for _, c := range cells {
		if seen[c.Rollout] {
			continue
		}
		seen[c.Rollout] = true
		if st != nil {
			if r, ok, _ := st.Rollout(c.Rollout); ok && r.Status != store.StatusInvalid {
				continue
			}
		}
		dir, release, ok, err := o.at(c.Rollout)
		if err != nil {
			res.Refused = append(res.Refused, err.Error())
			continue
		}
		if !ok {
			continue
		}
		inputs := func(r *store.Rollout) error { return checkInputs(p, r, cases[c.Case], arms[c.Arm]) }
		r, err := check(dir, c.Rollout, inputs)
		if err != nil {
			release()
			if err != errNotTaken {
				again := func(dir string) error { _, err := check(dir, c.Rollout, inputs); return err }
				res.Refused = append(res.Refused, o.refuse(c.Rollout, err, again))
			}
			continue
		}
		if !dryRun {
			if err := copyExchanges(dir, st, r); err != nil {
				release() // changed since it was verified: refused as it was
				res.Refused = append(res.Refused, fmt.Sprintf("rollout %s (%s): %v", c.Rollout.Encoded()[:12], r.Cell, err))
				continue
			}
			err = copyRollout((&store.Store{Dir: dir}).RolloutDir(c.Rollout), st, c.Rollout)
		}
		release()
		if err != nil {
			return res, fmt.Errorf("reuse rollout %s: %w", r.Cell, err)
		}
		cost := Cost{Seconds: r.Durations.Total}
		if r.Gateway != nil && r.Gateway.USD != nil {
			cost.USD = *r.Gateway.USD
		}
		res.SavedUSD += cost.USD
		res.SavedSeconds += cost.Seconds
		if res.Costs == nil {
			res.Costs = map[digest.Digest]Cost{}
		}
		res.Costs[c.Rollout] = cost
		res.Taken = append(res.Taken, Taken{Key: c.Rollout, Cell: c.ID, From: o.name(), RanAt: r.StartedAt, TakenAt: now})
	}
	if len(res.Taken) > 0 && !dryRun {
		if err := appendLedger(st, res.Taken); err != nil {
			return res, err
		}
	}
	return res, nil
}

// errNotTaken: the source stores no rollout under the key, or an invalid
// one: nothing to take, nothing refused.
var errNotTaken = errors.New("no valid rollout stored")

// check reads and verifies the rollout stored under key in the run folder
// dir: its seal, its files, its exchange log and bodies, and what inputs
// says of it.
func check(dir string, key digest.Digest, inputs func(*store.Rollout) error) (*store.Rollout, error) {
	r, ok, err := (&store.Store{Dir: dir}).Rollout(key)
	if err != nil {
		return nil, err
	}
	if !ok || r.Status == store.StatusInvalid {
		return nil, errNotTaken
	}
	if err := inputs(r); err != nil {
		return nil, fmt.Errorf("rollout %s (%s): %v", key.Encoded()[:12], r.Cell, err)
	}
	if err := verifyExchanges(dir, r); err != nil {
		return nil, fmt.Errorf("rollout %s (%s): %v", key.Encoded()[:12], r.Cell, err)
	}
	return r, nil
}

// openSource is the run folder from names: itself, or a pack unpacked
// (checked against its manifest) into a temporary folder done removes.
func openSource(from string) (dir string, done func(), err error) {
	info, err := os.Stat(from)
	if err != nil {
		return "", nil, fmt.Errorf("reuse from %s: %w", from, err)
	}
	if info.IsDir() {
		if _, err := os.Stat(filepath.Join(from, store.DirRollouts)); err != nil {
			return "", nil, fmt.Errorf("reuse from %s: not a run folder (no %s)", from, store.DirRollouts)
		}
		return from, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "skillgate-reuse-")
	if err != nil {
		return "", nil, fmt.Errorf("reuse from %s: %w", from, err)
	}
	f, err := os.Open(from)
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, fmt.Errorf("reuse from %s: %w", from, err)
	}
	defer f.Close()
	out := filepath.Join(tmp, "run")
	if _, err := store.Unpack(f, out); err != nil {
		os.RemoveAll(tmp)
		return "", nil, fmt.Errorf("reuse from %s: %w", from, err)
	}
	return out, func() { os.RemoveAll(tmp) }, nil
}

// checkInputs checks that a rollout stored under a cell's key ran the
// cell's fixture and skills, as merge checks it.
func checkInputs(p *plan.Plan, r *store.Rollout, pc plan.PlanCase, arm plan.PlanArm) error {
	if r.Inputs.Fixture != "" && r.Inputs.Fixture != pc.FixtureDigest {
		return fmt.Errorf("it ran fixture %s, the cell has %s: altered or damaged", r.Inputs.Fixture, pc.FixtureDigest)
	}
	if r.Inputs.Skills == nil {
		return nil
	}
	var got, want []string
	for _, s := range r.Inputs.Skills {
		got = append(got, s.Digest.String())
	}
	for _, k := range arm.Skills {
		want = append(want, p.Skills[k].Digest.String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("it ran skills %v, the cell installs %v: altered or damaged", got, want)
	}
	return nil
}

// eachBody reads the rollout's exchange log and every body it names,
// each against its digest, and gives each body to f; it says whether the
// rollout has an exchange log.
func eachBody(dir string, r *store.Rollout, f func(d digest.Digest, b []byte) error) (bool, error) {
	if r.Gateway == nil || r.Gateway.Exchanges == "" {
		return false, nil
	}
	l, err := gateway.ReadLog(dir, r.Gateway.Exchanges)
	if err != nil {
		return true, err
	}
	for _, ex := range l.Exchanges {
		for _, d := range []digest.Digest{ex.Request.Digest, ex.Response.Digest} {
			if d == "" {
				continue
			}
			b, err := gateway.ReadBody(dir, d)
			if err == nil {
				err = f(d, b)
			}
			if err != nil {
				return true, err
			}
		}
	}
	return true, nil
}

// verifyExchanges reads the rollout's exchange log and every body it
// names, each against its digest.
func verifyExchanges(dir string, r *store.Rollout) error {
	_, err := eachBody(dir, r, func(digest.Digest, []byte) error { return nil })
	return err
}

// copyExchanges copies the rollout's exchange log and every body it names
// into st, each read against its digest.
func copyExchanges(dir string, st *store.Store, r *store.Rollout) error {
	has, err := eachBody(dir, r, func(d digest.Digest, b []byte) error {
		return st.PutFile(filepath.Join(st.Dir, filepath.FromSlash(gateway.BodyPath(d))), b)
	})
	if !has || err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(gateway.LogPath(r.Gateway.Exchanges))))
	if err != nil {
		return err
	}
	return st.PutFile(filepath.Join(st.Dir, filepath.FromSlash(gateway.LogPath(r.Gateway.Exchanges))), b)
}

// copyRollout copies a verified rollout folder into st's tmp, then renames
// it into place, replacing an invalid one.
func copyRollout(src string, st *store.Store, key digest.Digest) error {
	tmp, err := os.MkdirTemp(filepath.Join(st.Dir, store.DirTmp), "reuse-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(tmp, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		return err
	}
	dst := st.RolloutDir(key)
	if err := os.RemoveAll(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(tmp, dst)
}

// Ledger reads a run folder's ledger of reused rollouts, by key.
func Ledger(out string) (map[digest.Digest]Taken, error) {
	list, err := store.ReadReused(out)
	if err != nil {
		return nil, err
	}
	m := make(map[digest.Digest]Taken, len(list))
	for _, t := range list {
		m[t.Key] = t
	}
	return m, nil
}

func appendLedger(st *store.Store, taken []Taken) error {
	old, err := store.ReadReused(st.Dir)
	if err != nil {
		return err
	}
	again := map[digest.Digest]bool{}
	for _, t := range taken {
		again[t.Key] = true
	}
	old = slices.DeleteFunc(old, func(t Taken) bool { return again[t.Key] }) // taken once more
	return writeLedger(st, append(old, taken...))
}

// Forget takes keys out of st's ledger: their reused rollouts were refused
// and run again here.
func Forget(st *store.Store, keys map[digest.Digest]bool) error {
	old, err := store.ReadReused(st.Dir)
	if err != nil {
		return err
	}
	return writeLedger(st, slices.DeleteFunc(old, func(t Taken) bool { return keys[t.Key] }))
}

func writeLedger(st *store.Store, list []Taken) error {
	b, err := store.EncodeReused(list)
	if err == nil {
		err = st.PutFile(filepath.Join(st.Dir, FileLedger), b)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", FileLedger, err)
	}
	return nil
}

// Span says d to the unit that matters.
func Span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
