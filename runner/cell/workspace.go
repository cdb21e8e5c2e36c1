package cell

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/skillgate/skillgate/runner/backend"
	"github.com/skillgate/skillgate/runner/redact"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// InitialWorkspace is a cell's workspace before its agent runs, by workspace path: the
// case's fixture files (with its overlay's) and the arm's installed skills, as the plan
// digested them. A skill's folder holds its tree alone: it hides what the fixture has
// there.
func InitialWorkspace(p *plan.Plan, pc plan.PlanCase, arm plan.PlanArm) map[string]plan.TreeEntry {
	files := map[string]plan.TreeEntry{}
	t, _ := p.CaseTree(pc) // merged when the plan was compiled
	for rel, e := range t.Files {
		files[rel] = e
	}
	for _, k := range arm.Skills {
		sk := p.Skills[k]
		at := path.Join(p.Agent.SkillsDir, sk.Name)
		for rel := range files {
			if rel == at || strings.HasPrefix(rel, at+"/") {
				delete(files, rel)
			}
		}
		for rel, e := range sk.Files {
			files[path.Join(at, rel)] = e
		}
	}
	return files
}

// workspaceLimits bound what a cell's collection stores.
type workspaceLimits struct {
	FileBytes, TotalBytes int64
}

// workspaceCollector turns the entries a finished cell left in its workspace into the
// changes of its final state against the initial workspace, storing the content of every
// changed regular file once, by digest, in blobs. Memory stays flat whatever a file's size:
// content streams from the container through the redactor and the hashes to its file.
type workspaceCollector struct {
	*workspaceIndex
	blobs  string
	redact *redact.Redactor
	lim    workspaceLimits

	stored      int64
	final       map[string]grade.FileChange // final non-deleted entries that differ
	removed     map[string]bool             // initial paths gone
	removedDirs map[string]bool             // initial folders gone
	listed      map[string]bool             // paths a listing collection saw
}

// workspaceIndex is an initial workspace as collectors look paths up in it. It is only
// read once made, so the trials of one cell image share one: a cell's collection then
// costs what its changes cost, not what the fixture's file count does.
type workspaceIndex struct {
	initial map[string]plan.TreeEntry
	sorted  []string        // initial paths, sorted
	dirs    map[string]bool // initial folders: those holding an initial file
}

func newWorkspaceIndex(initial map[string]plan.TreeEntry) *workspaceIndex {
	x := &workspaceIndex{initial: initial, sorted: make([]string, 0, len(initial)), dirs: map[string]bool{}}
	for p := range initial {
		x.sorted = append(x.sorted, p)
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if x.dirs[d] {
				break // and so every folder above it
			}
			x.dirs[d] = true
		}
	}
	sort.Strings(x.sorted)
	return x
}

func newWorkspaceCollector(initial map[string]plan.TreeEntry, blobs string, redact *redact.Redactor, lim workspaceLimits) *workspaceCollector {
	return newIndexedCollector(newWorkspaceIndex(initial), blobs, redact, lim)
}

// newIndexedCollector is a collector against an index made before, which it only reads.
func newIndexedCollector(x *workspaceIndex, blobs string, redact *redact.Redactor, lim workspaceLimits) *workspaceCollector {
	return &workspaceCollector{workspaceIndex: x, blobs: blobs, redact: redact, lim: lim,
		final: map[string]grade.FileChange{}, removed: map[string]bool{}, removedDirs: map[string]bool{}, listed: map[string]bool{}}
}

// under calls f with every initial path strictly below dir ("" is the workspace).
func (w *workspaceCollector) under(dir string, f func(string)) {
	prefix := dir + "/"
	if dir == "" {
		prefix = ""
	}
	i := sort.SearchStrings(w.sorted, prefix)
	for ; i < len(w.sorted) && strings.HasPrefix(w.sorted[i], prefix); i++ {
		f(w.sorted[i])
	}
}

// visit takes one entry of the container's workspace.
func (w *workspaceCollector) visit(e backend.WorkspaceEntry) error {
	if e.Path == "" || strings.ContainsRune(e.Path, 0) {
		return nil
	}
	if e.Listed {
		w.listed[e.Path] = true
		return nil
	}
	w.listed[e.Path] = true
	remove := func(p string) { w.removed[p] = true }
	removeDirs := func(dir string) {
		for d := range w.dirs {
			if strings.HasPrefix(d, dir+"/") {
				w.removedDirs[d] = true
			}
		}
	}
	if e.Deleted {
		if _, ok := w.initial[e.Path]; ok {
			remove(e.Path)
		}
		if w.dirs[e.Path] {
			w.removedDirs[e.Path] = true
			removeDirs(e.Path)
		}
		w.under(e.Path, remove)
		delete(w.final, e.Path)
		return nil
	}
	delete(w.removed, e.Path)
	delete(w.removedDirs, e.Path)
	init, had := w.initial[e.Path]
	ch := grade.FileChange{Path: e.Path, Kind: grade.ChangeAdded, Type: e.Type}
	if had {
		ch.Kind = grade.ChangeModified
	}
	switch e.Type {
	case backend.TypeDir:
		if e.Opaque {
			w.under(e.Path, remove)
			removeDirs(e.Path)
		}
		if !had {
			return nil // a folder only holds what is listed below it
		}
		// A folder where the fixture had a file or link.
	case backend.TypeSymlink:
		ch.Target = e.Target
		if had && init.Mode == "symlink" && init.Digest == digest.FromString(filepath.ToSlash(e.Target)) {
			return nil
		}
	case backend.TypeFile:
		ch.Exec, ch.Size = e.Mode&0o111 != 0, e.Size
		same, err := w.store(e, &ch, init, had)
		if err != nil {
			return err
		}
		if same {
			return nil // copied up, or rewritten, with the fixture's own bytes
		}
	}
	w.final[e.Path] = ch
	return nil
}

// store streams a regular file's content into a blob, unless a limit cuts it, and says
// whether it is byte for byte the initial file.
func (w *workspaceCollector) store(e backend.WorkspaceEntry, ch *grade.FileChange, init plan.TreeEntry, had bool) (same bool, err error) {
	switch {
	case w.lim.FileBytes > 0 && e.Size > w.lim.FileBytes:
		ch.Cut = fmt.Sprintf("%d bytes, over limits.collect.fileBytes (%d)", e.Size, w.lim.FileBytes)
		return false, nil
	case w.lim.TotalBytes > 0 && w.stored+e.Size > w.lim.TotalBytes:
		ch.Cut = fmt.Sprintf("over limits.collect.totalBytes (%d) with the files before it", w.lim.TotalBytes)
		return false, nil
	}
	rc, err := e.Open()
	if err != nil {
		ch.Cut = "unreadable: " + err.Error()
		return false, nil
	}
	defer rc.Close()
	if err := os.MkdirAll(w.blobs, 0o755); err != nil {
		return false, fmt.Errorf("store %s: %w", e.Path, err)
	}
	tmp, err := os.CreateTemp(w.blobs, ".part-")
	if err != nil {
		return false, fmt.Errorf("store %s: %w", e.Path, err)
	}
	defer os.Remove(tmp.Name()) // gone once renamed
	raw, stored := sha256.New(), sha256.New()
	var sink io.Writer = io.MultiWriter(tmp, stored)
	rw := w.redact.Writer(sink)
	// At most one byte past the limit is read: a file that grew is cut, not stored whole.
	limit := e.Size + 1
	if w.lim.FileBytes > 0 {
		limit = w.lim.FileBytes + 1
	}
	n, err := io.Copy(io.MultiWriter(raw, rw), io.LimitReader(rc, limit))
	if err == nil {
		err = rw.Close()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		var cut backend.CollectCut
		if errors.As(err, &cut) {
			ch.Cut = cut.Reason
			return false, cut
		}
		return false, fmt.Errorf("store %s: %w", e.Path, err)
	}
	if w.lim.FileBytes > 0 && n > w.lim.FileBytes {
		ch.Cut = fmt.Sprintf("over limits.collect.fileBytes (%d)", w.lim.FileBytes)
		return false, nil
	}
	rawDigest := digest.NewDigest(digest.SHA256, raw)
	if had && init.Mode != "symlink" && init.Digest == rawDigest && (init.Mode == "exec") == ch.Exec {
		return true, nil
	}
	ch.Size = n
	ch.Digest = digest.NewDigest(digest.SHA256, stored)
	ch.Redacted = rw.Redacted()
	w.stored += n
	if err := os.Rename(tmp.Name(), filepath.Join(w.blobs, ch.Digest.Encoded())); err != nil {
		return false, fmt.Errorf("store %s: %w", e.Path, err)
	}
	return false, nil
}

// changes is the final state's difference from the initial workspace, sorted by path.
// complete says the entries listed the whole final workspace (a listing collection that
// was not cut): then every initial path not listed is gone too.
func (w *workspaceCollector) changes(complete bool) []grade.FileChange {
	if complete {
		for p := range w.initial {
			if !w.listed[p] {
				w.removed[p] = true
			}
		}
		for d := range w.dirs {
			if !w.listed[d] {
				w.removedDirs[d] = true
			}
		}
	}
	out := make([]grade.FileChange, 0, len(w.final)+len(w.removed))
	for d := range w.removedDirs {
		// One entry for a removed folder, none for the folders it held.
		top := true
		for p := path.Dir(d); p != "."; p = path.Dir(p) {
			if w.removedDirs[p] {
				top = false
				break
			}
		}
		if top {
			out = append(out, grade.FileChange{Path: d, Kind: grade.ChangeDeleted, Type: grade.TypeDir})
		}
	}
	for _, ch := range w.final {
		out = append(out, ch)
	}
	for p := range w.removed {
		if _, ok := w.final[p]; ok {
			continue
		}
		typ := grade.TypeFile
		if w.initial[p].Mode == "symlink" {
			typ = grade.TypeSymlink
		}
		out = append(out, grade.FileChange{Path: p, Kind: grade.ChangeDeleted, Type: typ})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
