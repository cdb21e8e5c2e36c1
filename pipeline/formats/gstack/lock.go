package gstack

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/pipeline"
)

// Lock is tasks.lock.json: what a paid run is held to. gstack commits its
// tasks before the skill is cut, and a paid run must measure exactly them:
// the tasks file, its sidecar and the fixtures setups and checks read, and
// the trial count, fixed before the run. schema/formats/gstack's #Lock is
// its shape.
type Lock struct {
	LockVersion int    `json:"lock_version"`
	Harness     string `json:"harness"`
	// Tasks is the digest of tasks.json's bytes; Ext of tasks.ext.json's,
	// nil without one.
	Tasks digest.Digest  `json:"tasks"`
	Ext   *digest.Digest `json:"ext"`
	// Fixtures is the digest of the rest of the tasks file's folder (seed.sh
	// and what setups and checks read): every file's path, mode and
	// content.
	Fixtures digest.Digest `json:"fixtures"`
	TaskIDs  []string      `json:"task_ids"`
	Trials   int           `json:"trials"`
}

// LockVersion is the format of the lock files MakeLock writes.
const LockVersion = 1

// MakeLock computes the lock of the tasks file and the trial count.
func MakeLock(tasksFile string, trials int) (*Lock, error) {
	b, err := os.ReadFile(tasksFile)
	if err != nil {
		return nil, fmt.Errorf("lock tasks: %w", err)
	}
	var tasks []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &tasks); err != nil {
		return nil, fmt.Errorf("lock tasks %s: %w", tasksFile, err)
	}
	l := &Lock{LockVersion: LockVersion, Harness: "skillgate " + pipeline.Version(), Tasks: digest.FromBytes(b), TaskIDs: []string{}, Trials: trials}
	for _, t := range tasks {
		l.TaskIDs = append(l.TaskIDs, t.ID)
	}
	dir := filepath.Dir(tasksFile)
	if e, err := os.ReadFile(filepath.Join(dir, FileExt)); err == nil {
		d := digest.FromBytes(e)
		l.Ext = &d
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("lock tasks: %w", err)
	}
	if l.Fixtures, err = folderDigest(dir); err != nil {
		return nil, fmt.Errorf("lock tasks: %w", err)
	}
	return l, nil
}

// folderDigest digests a tasks folder's files other than the tasks file,
// its sidecar and its lock: each one's slash path, executable bit (or
// symlink target) and content digest, sorted by path.
func folderDigest(dir string) (digest.Digest, error) {
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == FileTasks || rel == FileExt || rel == FileLock {
			return nil // locked apart, or the lock itself
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := "file"
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%s\x00link\x00%s", rel, target))
			return nil
		case info.Mode()&0o111 != 0:
			mode = "exec"
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s\x00%s\x00%x", rel, mode, sha256.Sum256(b)))
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.Sort(lines)
	return digest.FromString(strings.Join(lines, "\n")), nil
}

func digestOrNone(d *digest.Digest) string {
	if d == nil {
		return "none"
	}
	return d.String()
}

// WriteLock writes l as tasks.lock.json beside the tasks file, and returns
// its path.
func WriteLock(tasksFile string, l *Lock) (string, error) {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(tasksFile), FileLock)
	return p, pipeline.WriteFile(p, append(b, '\n'))
}

// CheckLock refuses a paid run whose tasks are not the locked ones: no
// tasks.lock.json beside the tasks file, or one whose digests or trials
// differ, each difference named.
func CheckLock(tasksFile string, trials int) error {
	p := filepath.Join(filepath.Dir(tasksFile), FileLock)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("check lock: a paid run needs %s committed beside %s: run skill-eval with --lock, commit the file, and run again", FileLock, tasksFile)
	}
	if err != nil {
		return fmt.Errorf("check lock: %w", err)
	}
	var locked Lock
	if err := json.Unmarshal(b, &locked); err != nil {
		return fmt.Errorf("check lock %s: %w", p, err)
	}
	now, err := MakeLock(tasksFile, trials)
	if err != nil {
		return err
	}
	var diffs []string
	if locked.Tasks != now.Tasks {
		diffs = append(diffs, FileTasks+" changed")
	}
	if digestOrNone(locked.Ext) != digestOrNone(now.Ext) {
		diffs = append(diffs, FileExt+" changed")
	}
	if locked.Fixtures != now.Fixtures {
		diffs = append(diffs, "the fixtures in "+filepath.Dir(tasksFile)+" changed")
	}
	if locked.Trials != trials {
		diffs = append(diffs, fmt.Sprintf("the lock fixes %d trials, the run asks for %d", locked.Trials, trials))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("check lock %s: %s; a paid run measures the locked tasks only: rerun --lock, commit it, and run again", p, strings.Join(diffs, "; "))
	}
	return nil
}
