package store

// Merge: the ledger of reused rollouts (reused.json) is carried for the
// rollouts the merge takes. Each entry is checked against the folder that
// lists it, as the records are: it names a rollout key of the plan, one of
// that key's cells, and the very rollout the folder holds under the key
// (the time its session started). An entry is carried when the version of
// its rollout the merge chose is the one its folder holds; an entry for a
// key two folders list is carried once, the one taken first.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/runfolder"

	"github.com/opencontainers/go-digest"
)

// FileReused is the ledger of rollouts run --reuse took.
const FileReused = runfolder.FileReused

// Reused is one rollout a run folder took from elsewhere (run --reuse):
// an entry of its reused.json.
type Reused struct {
	Key  digest.Digest `json:"key"`
	Cell string        `json:"cell"`
	// From is the run folder, pack or cache it was taken from.
	From string `json:"from"`
	// RanAt is when its session started; TakenAt when it was taken.
	RanAt   time.Time `json:"ranAt"`
	TakenAt time.Time `json:"takenAt"`
}

// ReadReused reads a run folder's reused.json; nil when it has none.
func ReadReused(out string) ([]Reused, error) {
	file := filepath.Join(out, FileReused)
	b, err := readRegular(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", FileReused, err)
	}
	var list []Reused
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return list, nil
}

// scanReused reads and checks input i's reused.json.
func (m *merger) scanReused(i int) error {
	in := m.inputs[i]
	list, err := ReadReused(in.abs)
	if err != nil {
		return fmt.Errorf("verify %s: %w", in.dir, err)
	}
	in.reused = map[digest.Digest]Reused{}
	for n, t := range list {
		err := func() error {
			cells, ok := m.ix.rollouts[t.Key]
			switch {
			case !ok:
				return fmt.Errorf("key %s is no rollout key of the plan", t.Key)
			case !slices.ContainsFunc(cells, func(c plan.Cell) bool { return c.ID == t.Cell }):
				return fmt.Errorf("cell %s does not run rollout %s", t.Cell, short(t.Key.Encoded()))
			case t.From == "" || t.TakenAt.IsZero():
				return errors.New("no source or no time taken")
			}
			started, held := in.started[t.Key]
			if _, ok := in.held[t.Key]; !ok || !held {
				return fmt.Errorf("it names rollout %s (%s), which the folder does not hold", short(t.Key.Encoded()), t.Cell)
			}
			if !started.Equal(t.RanAt) {
				return fmt.Errorf("it names rollout %s (%s) run at %s; the folder holds one run at %s", short(t.Key.Encoded()), t.Cell, t.RanAt.Format(time.RFC3339), started.Format(time.RFC3339))
			}
			return nil
		}()
		if err != nil {
			return fmt.Errorf("verify %s: %s entry %d: %w: altered or damaged", in.dir, FileReused, n+1, err)
		}
		in.reused[t.Key] = t
	}
	return nil
}

// reusedLedger is the merged folder's reused.json: the entries of the
// chosen rollouts, by the folders holding the chosen version; nil when
// there are none.
func (m *merger) reusedLedger() ([]byte, int, error) {
	var list []Reused
	for _, k := range m.sorted(KindRollout) {
		if k.chosen == nil {
			continue
		}
		var pick *Reused
		for _, i := range k.chosen.inputs {
			t, ok := m.inputs[i].reused[digest.NewDigestFromEncoded(digest.SHA256, k.key)]
			if ok && (pick == nil || t.TakenAt.Before(pick.TakenAt)) {
				pick = &t
			}
		}
		if pick != nil {
			list = append(list, *pick)
		}
	}
	if len(list) == 0 {
		return nil, 0, nil
	}
	b, err := EncodeReused(list)
	return b, len(list), err
}

// EncodeReused is reused.json holding list, in the order entries were
// taken (then by cell).
func EncodeReused(list []Reused) ([]byte, error) {
	list = slices.Clone(list)
	if list == nil {
		list = []Reused{}
	}
	slices.SortFunc(list, func(a, b Reused) int {
		if d := a.TakenAt.Compare(b.TakenAt); d != 0 {
			return d
		}
		return strings.Compare(a.Cell, b.Cell)
	})
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", FileReused, err)
	}
	return append(b, '\n'), nil
}
