package checks

import (
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/backend"
	"github.com/skillgate/skillgate/runner/images"
)

// CheckWorldTars are the archives that turn a cell image into the cell's final state.
type CheckWorldTars struct {
	// given holds the answer and the lists of deleted paths, root-owned.
	given []byte
	// steps apply the setup's changes, then the agent's.
	steps []worldStep
}

// worldStep is one set of changes: the paths it deleted, listed in the file deletes ("" for
// none), then the final entries that differ, owned by the agent's user (nil for none).
type worldStep struct {
	deletes string
	changed []byte
}

// CheckWorld builds the archives of a cell's final state from its stored changes.
func CheckWorld(p *plan.Plan, w grade.World, answer []byte) (CheckWorldTars, error) {
	uid, gid, err := images.Owner(p.Agent.User)
	if err != nil {
		return CheckWorldTars{}, err
	}
	var out CheckWorldTars
	given := backend.NewBuildContext("")
	given.AddDir(strings.TrimPrefix(CheckDir, "/"), 0o555, 0, 0)
	given.AddFile(strings.TrimPrefix(CheckAnswer, "/"), 0o444, 0, 0, answer)
	for _, set := range []struct {
		changes []grade.FileChange
		list    string
	}{{w.Baseline, CheckSetupDelete}, {w.Changes, CheckDelete}} {
		var step worldStep
		if del := DeletedList(set.changes); len(del) > 0 {
			given.AddFile(strings.TrimPrefix(set.list, "/"), 0o444, 0, 0, del)
			step.deletes = set.list
		}
		changed := backend.NewBuildContext("")
		if AddChanges(changed, set.changes, w.Changed, uid, gid) > 0 {
			if step.changed, err = changed.Layer(); err != nil {
				return out, fmt.Errorf("lay out the final workspace: %w", err)
			}
		}
		if step.deletes != "" || step.changed != nil {
			out.steps = append(out.steps, step)
		}
	}
	if out.given, err = given.Layer(); err != nil {
		return out, fmt.Errorf("lay out the final workspace: %w", err)
	}
	return out, nil
}

// DeletedList is the NUL-separated list of the deleted paths among changes.
func DeletedList(changes []grade.FileChange) []byte {
	var del bytes.Buffer
	for _, ch := range changes {
		if ch.Kind == grade.ChangeDeleted {
			del.WriteString(ch.Path)
			del.WriteByte(0)
		}
	}
	return del.Bytes()
}

// AddChanges adds to bc, below the workspace, every entry that changes leave (their
// contents from the folder changed), with the folders leading to them, owned by uid:gid,
// and returns how many. A cut file, a FIFO or a device is not reproduced.
func AddChanges(bc *backend.BuildContext, changes []grade.FileChange, changed string, uid, gid int) int {
	ws := strings.TrimPrefix(backend.Workspace, "/")
	n := 0
	for _, ch := range changes {
		if ch.Kind == grade.ChangeDeleted || ch.Cut != "" || ch.Type == grade.TypeOther {
			continue
		}
		rel := path.Join(ws, ch.Path)
		for d := path.Dir(ch.Path); d != "."; d = path.Dir(d) {
			bc.AddDir(path.Join(ws, d), 0o755, uid, gid)
		}
		switch ch.Type {
		case grade.TypeDir:
			bc.AddDir(rel, 0o755, uid, gid)
		case grade.TypeSymlink:
			bc.AddSymlink(rel, ch.Target, uid, gid)
		default:
			mode := int64(0o644)
			if ch.Exec {
				mode = 0o755
			}
			blob := filepath.Join(changed, ch.Digest.Encoded())
			if ch.Digest == "" {
				blob = filepath.Join(changed, filepath.FromSlash(ch.Path))
			}
			bc.AddHostFileMode(rel, blob, mode, uid, gid)
		}
		n++
	}
	return n
}
