package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillgate/skillgate/pipeline/runfolder"
	"github.com/skillgate/skillgate/runner/gateway"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// Change is one changed workspace path of a rollout.
type Change = grade.FileChange

// Kinds of Change.
const (
	ChangeAdded    = grade.ChangeAdded
	ChangeModified = grade.ChangeModified
	ChangeDeleted  = grade.ChangeDeleted
)

// Statuses of a rollout (see pipeline/grade for their meaning).
const (
	StatusCompleted = grade.StatusCompleted
	StatusFailed    = grade.StatusFailed
	StatusTimeout   = grade.StatusTimeout
	StatusOOM       = grade.StatusOOM
	StatusInvalid   = grade.StatusInvalid
)

// Rollout is the stored record of one agent session: everything the
// container left, normalized. It is stored under its rollout key, so every
// plan whose cell has that key reuses it.
type Rollout struct {
	Key  digest.Digest `json:"key"`
	Plan digest.Digest `json:"plan"`
	// Cell is the cell that produced the rollout.
	Cell  string `json:"cell"`
	Case  string `json:"case"`
	Arm   string `json:"arm"`
	Trial int    `json:"trial"`

	Status   string `json:"status"`
	ExitCode int    `json:"exitCode"`
	Error    string `json:"error,omitempty"`

	Image   string `json:"image"`
	ImageID string `json:"imageID,omitempty"`
	// Inputs are what the cell ran: its fixture and skill trees (verified
	// against the plan as its image was built), the images, the suite's git
	// revision and skillgate's version.
	Inputs plan.RolloutInputs `json:"inputs"`
	// InputsChanged names the skill or fixture files that changed while
	// the invocation that ran the cell was running: the rollout is then
	// invalid, and the next run reruns it.
	InputsChanged []string `json:"inputsChanged,omitempty"`

	// Answer is the agent's final answer (also stored as answer.txt).
	Answer string `json:"answer"`
	// Messages are every assistant message of the session, in order, when
	// they are more than the answer alone.
	Messages   []string            `json:"messages,omitempty"`
	Transcript Transcript          `json:"transcript"`
	Telemetry  grade.CellTelemetry `json:"telemetry"`
	// Changes lists every workspace path whose final state differs from the initial
	// workspace (the fixture and the installed skills, with what the case's setup left),
	// the skills folder included.
	Changes []grade.FileChange `json:"changes"`
	// Collection says how the workspace was read back, and what its limits cut.
	Collection Collection `json:"collection"`
	// Setup is what the case's setup did before the agent started, when it
	// has one; Changes are then relative to what it left.
	Setup *Setup `json:"setup,omitempty"`

	// Gateway is what the cell asked of its model, as the gateway saw it.
	Gateway *gateway.CellUsage `json:"gateway,omitempty"`

	Durations Durations `json:"durations"`
	StartedAt time.Time `json:"startedAt"`
}

// Setup is the record of a case's setup in a cell: how it ended, what it printed, and the
// workspace it left, the agent's starting point, as changes against the initial workspace
// (the fixture and the installed skills) whose contents are stored with the rollout's.
type Setup struct {
	Run      string  `json:"run"`
	ExitCode int     `json:"exitCode"`
	TimedOut bool    `json:"timedOut,omitempty"`
	Seconds  float64 `json:"seconds"`
	// Output is its stdout and stderr, capped by limits.checkOutput, redacted.
	Output string `json:"output"`
	// Image is the ID of the image the agent started from: the cell image
	// with the setup's workspace.
	Image   string             `json:"image,omitempty"`
	Changes []grade.FileChange `json:"changes"`
}

// Transcript describes the stored stdout and stderr.
type Transcript struct {
	StdoutBytes int64 `json:"stdoutBytes"`
	StderrBytes int64 `json:"stderrBytes"`
	// Cap is the stored bytes per stream; Truncated says some were dropped.
	Cap       int64 `json:"cap"`
	Truncated bool  `json:"truncated"`
	// StdoutDigest and StderrDigest are the stored streams' digests, so a
	// transcript swapped later is refused.
	StdoutDigest digest.Digest `json:"stdoutDigest,omitempty"`
	StderrDigest digest.Digest `json:"stderrDigest,omitempty"`
}

// Collection says how a cell's workspace was read back, as the backend
// reported it (docker.Collection).
type Collection struct {
	// Method is "upper" (the container's own overlay layer) or "api" (the
	// engine's change list and an archive of the workspace).
	Method string `json:"method"`
	// Entries counts the paths visited.
	Entries int `json:"entries"`
	// Cut says why the collection stopped before the end; empty when complete.
	Cut string `json:"cut,omitempty"`
}

// Durations of a cell's phases, in seconds.
type Durations struct {
	Image   float64 `json:"image"`
	Create  float64 `json:"create"`
	Start   float64 `json:"start"`
	Agent   float64 `json:"agent"`
	Collect float64 `json:"collect"`
	Total   float64 `json:"total"`
	// Setup is the case's setup, shared by the trials of one cell image.
	Setup float64 `json:"setup,omitempty"`
}

// Folders of the store, in the run folder (see the package's doc).
const (
	DirRollouts      = runfolder.DirRollouts
	DirTrees         = runfolder.DirTrees
	DirGrades        = runfolder.DirGrades
	DirPackets       = runfolder.DirPackets
	DirJudgements    = runfolder.DirJudgements
	DirJudgeFailures = runfolder.DirJudgeFailures
	DirTmp           = runfolder.DirTmp
)

// Files of a stored rollout, inside its folder.
const (
	FileRollout = runfolder.FileRollout
	FileAnswer  = runfolder.FileAnswer
	FileStdout  = runfolder.FileStdout
	FileStderr  = runfolder.FileStderr
	// DirFiles holds the contents of the changed files, one file per digest (its hex).
	DirFiles = runfolder.DirFiles
)

// Store keeps rollouts by key under a run folder. A rollout is written
// into a temporary folder and renamed into place, so a crash never leaves a
// partial one where a later run would trust it.
type Store struct {
	Dir string
	// Shared, when set, is the machine's store of tree snapshots that
	// PinTree links this folder's from (runner/cache).
	Shared SharedTrees
	// later are the trees being pinned while the first cells run.
	later *laterPins
}

// OpenStore opens (making it if needed) the store under dir and clears what
// an interrupted run left half-written.
func OpenStore(dir string) (*Store, error) {
	// Absolute: store folders are bind-mounted into check containers.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	// Checked before anything is made: a link at store/grades must not
	// make the run write elsewhere.
	if err := CheckLinks(dir); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	for _, d := range []string{DirRollouts, DirTmp} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	tmps, _ := os.ReadDir(filepath.Join(dir, DirTmp))
	for _, t := range tmps {
		os.RemoveAll(filepath.Join(dir, DirTmp, t.Name()))
	}
	records, _ := os.ReadDir(filepath.Join(dir, DirKnown))
	for _, r := range records {
		if strings.HasPrefix(r.Name(), ".") { // one left half-written
			os.RemoveAll(filepath.Join(dir, DirKnown, r.Name()))
		}
	}
	return &Store{Dir: dir}, nil
}

// RolloutDir is the folder of the rollout stored under key.
func (s *Store) RolloutDir(key digest.Digest) string {
	return filepath.Join(s.Dir, DirRollouts, key.Encoded())
}

// Rollout reads the rollout stored under key, verified (its seal, its
// answer, transcript and changed files' contents); ok is false when there
// is none.
func (s *Store) Rollout(key digest.Digest) (r *Rollout, ok bool, err error) {
	r = &Rollout{}
	dir := s.RolloutDir(key)
	if ok, err = readSealed(filepath.Join(dir, FileRollout), r); err != nil || !ok {
		return nil, false, err
	}
	if r.Key != key {
		return nil, false, fmt.Errorf("read rollout %s: it records key %s, not the one it is named by: altered or damaged", dir, r.Key)
	}
	if err := verifyRolloutFiles(dir, r); err != nil {
		return nil, false, fmt.Errorf("read rollout %s (%s): %w", dir, r.Cell, err)
	}
	return r, true, nil
}

// TreeDir is the folder holding the snapshot of the skill or fixture tree
// with that digest: its files, verified against the plan when they were
// copied (see PinTree). Cells are built, graded and judged from it, never
// from the live suite folder.
func (s *Store) TreeDir(tree digest.Digest) string {
	return filepath.Join(s.Dir, DirTrees, tree.Encoded())
}

// Invalidate re-stores the valid rollout under key as invalid, for the
// reason given, naming the changed input files; the next run reruns it.
func (s *Store) Invalidate(key digest.Digest, reason string, changed []string) error {
	r, ok, err := s.Rollout(key)
	if err != nil || !ok {
		return err
	}
	r.Status, r.Error, r.InputsChanged = StatusInvalid, reason, changed
	if err := s.putSealed(filepath.Join(s.RolloutDir(key), FileRollout), r); err != nil {
		return fmt.Errorf("invalidate rollout %s: %w", r.Cell, err)
	}
	return nil
}

// Stage makes a temporary folder for a rollout being collected.
func (s *Store) Stage() (string, error) {
	d, err := os.MkdirTemp(filepath.Join(s.Dir, DirTmp), "cell-")
	if err != nil {
		return "", fmt.Errorf("stage rollout: %w", err)
	}
	return d, nil
}

// Commit writes r into the staged folder and moves it into place,
// replacing an invalid rollout stored under the same key.
func (s *Store) Commit(staged string, r *Rollout) error {
	if err := r.recordTranscript(staged); err != nil {
		return fmt.Errorf("store rollout %s: %w", r.Cell, err)
	}
	b, err := sealJSON(r)
	if err != nil {
		return fmt.Errorf("store rollout %s: %w", r.Cell, err)
	}
	if err := os.WriteFile(filepath.Join(staged, FileRollout), b, 0o644); err != nil {
		return fmt.Errorf("store rollout %s: %w", r.Cell, err)
	}
	dst := s.RolloutDir(r.Key)
	if old, ok, _ := s.Rollout(r.Key); ok {
		if old.Status != StatusInvalid {
			os.RemoveAll(staged)
			return nil // stored meanwhile by another cell with the same key
		}
		if err := os.RemoveAll(dst); err != nil {
			return fmt.Errorf("replace invalid rollout %s: %w", r.Cell, err)
		}
	}
	if err := os.Rename(staged, dst); err != nil {
		return fmt.Errorf("store rollout %s: %w", r.Cell, err)
	}
	return nil
}

// PutFile writes a store file atomically: a crash leaves at most a
// temporary file in store/tmp, which the next OpenStore clears.
func (s *Store) PutFile(file string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, DirTmp), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Join(s.Dir, DirTmp), "put-")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// FilePlan is the plan a run folder's reports describe.
const FilePlan = runfolder.FilePlan

// FileLock is the run folder's lock: a run holds it exclusively, a merge
// reading the folder shared.
const FileLock = runfolder.FileLock
