package grade

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// Kinds of FileChange.
const (
	ChangeAdded    = "added"
	ChangeModified = "modified"
	ChangeDeleted  = "deleted"
)

// Types of what a workspace path is.
const (
	TypeFile    = "file"
	TypeSymlink = "symlink"
	TypeDir     = "dir"
	// TypeOther is a FIFO, socket or device: listed, never stored.
	TypeOther = "other"
)

// FileChange is one workspace path whose final state differs from its
// initial one: a file, symlink or other non-folder entry added, modified
// or deleted, or a folder that replaced such an entry. Folders that only
// gained or lost entries are not changes of their own; every entry below
// them is listed.
type FileChange struct {
	// Path is relative to the workspace, slash-separated. It may hold any
	// bytes but NUL and '/' in its elements; see PathBytes.
	Path string `json:"path"`
	Kind string `json:"kind"` // added | modified | deleted
	// Type is what the path is at the end (for a deleted path, what it
	// was); "" reads as a file.
	Type string `json:"type,omitempty"`
	// Digest and Size describe a final regular file's stored content.
	Digest digest.Digest `json:"digest,omitempty"`
	Size   int64         `json:"size,omitempty"`
	// Exec marks an executable file.
	Exec bool `json:"exec,omitempty"`
	// Target is a final symlink's target, as the agent wrote it.
	Target string `json:"target,omitempty"`
	// Cut says why a final file's content was not stored (a collection
	// limit); checks then see the file as unreadable.
	Cut string `json:"cut,omitempty"`
	// Redacted: a secret was removed from the stored content.
	Redacted bool `json:"redacted,omitempty"`
}

// MarshalJSON keeps a path that is not valid UTF-8 exactly, in pathBytes.
func (c FileChange) MarshalJSON() ([]byte, error) {
	type plain FileChange
	j := struct {
		plain
		PathBytes []byte `json:"pathBytes,omitempty"`
	}{plain: plain(c)}
	if !utf8.ValidString(c.Path) {
		j.PathBytes = []byte(c.Path)
		j.Path = strings.ToValidUTF8(c.Path, "\uFFFD")
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *FileChange) UnmarshalJSON(b []byte) error {
	type plain FileChange
	var j struct {
		plain
		PathBytes []byte `json:"pathBytes,omitempty"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = FileChange(j.plain)
	if j.PathBytes != nil {
		c.Path = string(j.PathBytes)
	}
	return nil
}

// IsFile reports whether the change leaves a regular file.
func (c FileChange) IsFile() bool {
	return c.Kind != ChangeDeleted && (c.Type == "" || c.Type == TypeFile)
}

// WorldSkill is a skill installed in a cell's workspace.
type WorldSkill struct {
	// At is its folder relative to the workspace, such as
	// ".claude/skills/changelog".
	At string
	// Dir is the host folder holding its files, and Tree its files.
	Dir  string
	Tree *plan.Tree
}

// World is a cell's final workspace without copying it: the initial
// workspace (the case's fixture and the arm's installed skills), overlaid
// with the changes the agent made, whose contents are stored apart.
//
// Every lookup is answered from the trees and the change list, never by
// probing a folder where the agent may have put a file, or a file where it
// put a folder: any final state the agent can leave reads without error.
type World struct {
	// Fixture is the fixture folder on disk, "" for none; FixtureTree its
	// files (nil: read what the folder holds).
	Fixture     string
	FixtureTree *plan.Tree
	// Overlay and OverlayTree are the case's overlay, copied over the
	// fixture: a path it holds is read from it.
	Overlay     string
	OverlayTree *plan.Tree
	Skills      []WorldSkill
	// Changed is the folder holding the stored contents of changed files:
	// by digest (HEX of a change's Digest), or by path for a change
	// without one.
	Changed string
	Changes []FileChange
	// Baseline are the changes the case's setup made before the agent ran,
	// stored as Changes are (their contents in Changed too): the initial
	// workspace is the trees overlaid with them.
	Baseline []FileChange

	index     map[string]int
	baseIndex map[string]int
}

// maxLinks bounds the symlinks followed in one lookup, as the kernel does.
const maxLinks = 40

func (w *World) change(rel string) (FileChange, bool) {
	if w.index == nil {
		w.index = make(map[string]int, len(w.Changes))
		for i, c := range w.Changes {
			w.index[c.Path] = i
		}
	}
	i, ok := w.index[rel]
	if !ok {
		return FileChange{}, false
	}
	return w.Changes[i], true
}

// baseline finds rel among the setup's changes.
func (w *World) baseline(rel string) (FileChange, bool) {
	if len(w.Baseline) == 0 {
		return FileChange{}, false
	}
	if w.baseIndex == nil {
		w.baseIndex = make(map[string]int, len(w.Baseline))
		for i, c := range w.Baseline {
			w.baseIndex[c.Path] = i
		}
	}
	i, ok := w.baseIndex[rel]
	if !ok {
		return FileChange{}, false
	}
	return w.Baseline[i], true
}

// initialEntry finds rel in the initial workspace: the tree entry and the
// host file that holds it.
func (w *World) initialEntry(rel string) (plan.TreeEntry, string, bool) {
	for _, s := range w.Skills {
		if sub, ok := strings.CutPrefix(rel, s.At+"/"); ok {
			return treeLookup(s.Tree, s.Dir, sub)
		}
		if rel == s.At {
			return plan.TreeEntry{}, "", false
		}
	}
	if w.Overlay != "" {
		if e, host, ok := treeLookup(w.OverlayTree, w.Overlay, rel); ok {
			return e, host, true
		}
	}
	if w.Fixture == "" {
		return plan.TreeEntry{}, "", false
	}
	return treeLookup(w.FixtureTree, w.Fixture, rel)
}

// treeLookup finds rel in a tree, or, without one, in the folder itself
// (regular files and symlinks only).
func treeLookup(t *plan.Tree, dir, rel string) (plan.TreeEntry, string, bool) {
	host := filepath.Join(dir, filepath.FromSlash(rel))
	if t != nil {
		e, ok := t.Files[rel]
		return e, host, ok
	}
	fi, err := os.Lstat(host)
	if err != nil {
		return plan.TreeEntry{}, "", false
	}
	switch {
	case fi.Mode().IsRegular():
		return plan.TreeEntry{Size: fi.Size()}, host, true
	case fi.Mode()&fs.ModeSymlink != 0:
		return plan.TreeEntry{Mode: "symlink"}, host, true
	}
	return plan.TreeEntry{}, "", false
}

// entryState is what one path is at one moment: a file, a symlink or
// nothing readable.
type entryState struct {
	exists bool
	link   bool
	target string
	read   func() ([]byte, error)
	open   func() (*os.File, error)
	cut    string
}

// finalState is what rel is at the end, without following a symlink at rel.
func (w *World) finalState(rel string) entryState {
	if c, ok := w.change(rel); ok {
		return w.changedState(rel, c)
	}
	return w.initialState(rel)
}

// changedState is what a change leaves at rel.
func (w *World) changedState(rel string, c FileChange) entryState {
	switch {
	case c.Kind == ChangeDeleted:
		return entryState{}
	case c.Type == TypeSymlink:
		return entryState{exists: true, link: true, target: c.Target}
	case !c.IsFile():
		return entryState{exists: true} // a folder or other: no content
	case c.Cut != "":
		return entryState{exists: true, cut: c.Cut}
	}
	file := filepath.Join(w.Changed, filepath.FromSlash(rel))
	if c.Digest != "" {
		file = filepath.Join(w.Changed, c.Digest.Encoded())
	}
	return entryState{exists: true, read: func() ([]byte, error) { return os.ReadFile(file) }, open: func() (*os.File, error) { return os.Open(file) }}
}

// initialState is what rel was before the agent ran: what the setup left, else the trees.
func (w *World) initialState(rel string) entryState {
	if c, ok := w.baseline(rel); ok {
		return w.changedState(rel, c)
	}
	e, host, ok := w.initialEntry(rel)
	if !ok {
		return entryState{}
	}
	if e.Mode == "symlink" {
		target, err := os.Readlink(host)
		if err != nil {
			return entryState{}
		}
		return entryState{exists: true, link: true, target: filepath.ToSlash(target)}
	}
	return entryState{exists: true, read: func() ([]byte, error) { return os.ReadFile(host) }, open: func() (*os.File, error) { return os.Open(host) }}
}

// resolve follows the symlinks on the way to rel, element by element, as
// the kernel would inside the workspace. A link that leaves the workspace
// (an absolute target outside /workspace, or too many "..") resolves to
// nothing: checks see a missing file, never a host file.
func resolve(rel string, state func(string) entryState) (string, bool) {
	todo := strings.Split(rel, "/")
	var done []string
	links := 0
	for len(todo) > 0 {
		el := todo[0]
		todo = todo[1:]
		switch el {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", false
			}
			done = done[:len(done)-1]
			continue
		}
		cur := strings.Join(append(done, el), "/")
		st := state(cur)
		if !st.link {
			done = append(done, el)
			continue
		}
		links++
		if links > maxLinks {
			return "", false
		}
		target := st.target
		if strings.HasPrefix(target, "/") {
			sub, ok := strings.CutPrefix(path.Clean(target), WorkspaceRoot)
			if !ok || (sub != "" && !strings.HasPrefix(sub, "/")) {
				return "", false
			}
			done = nil
			target = strings.TrimPrefix(sub, "/")
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return strings.Join(done, "/"), true
}

// content is a state's bytes when it is a regular file whose content is
// stored; nil otherwise (a link, a folder, nothing, a cut file).
func (st entryState) content() ([]byte, error) {
	if !st.exists || st.link || st.read == nil {
		return nil, nil
	}
	b, err := st.read()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// stream opens a state's content when it is a regular file whose content is stored; nil
// (no error) otherwise. The caller closes it with closeStream.
func (st entryState) stream() (io.Reader, error) {
	if !st.exists || st.link || st.open == nil {
		return nil, nil
	}
	f, err := st.open()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// closeStream closes what stream opened.
func closeStream(r io.Reader) {
	if c, ok := r.(io.Closer); ok {
		c.Close()
	}
}

// WorkspaceRoot is where a cell's workspace is, as symlinks the agent makes
// may name it.
const WorkspaceRoot = "/workspace"

// errCut is what reading a file whose content was not collected gives.
type errCut struct{ rel, why string }

func (e *errCut) Error() string { return fmt.Sprintf("%s was not collected: %s", e.rel, e.why) }

// IsCut reports whether err says a file's content was not collected.
func IsCut(err error) bool {
	var c *errCut
	return errors.As(err, &c)
}

// Read returns a regular file of the final workspace, following symlinks
// inside it; ok is false when no readable file is there (absent, a
// folder, a dangling link, a link out of the workspace). A file whose
// content a collection limit cut is an error that IsCut recognizes.
func (w *World) Read(rel string) (data []byte, ok bool, err error) {
	return w.read(rel, w.finalState)
}

// Initial returns a file of the workspace as it was before the agent ran.
func (w *World) Initial(rel string) ([]byte, bool, error) {
	return w.read(rel, w.initialState)
}

func (w *World) read(rel string, state func(string) entryState) ([]byte, bool, error) {
	rel = strings.TrimPrefix(path.Clean("/"+rel), "/")
	real, ok := resolve(rel, state)
	if !ok {
		return nil, false, nil
	}
	st := state(real)
	switch {
	case !st.exists || st.link:
		return nil, false, nil
	case st.cut != "":
		return nil, true, &errCut{rel: rel, why: st.cut}
	case st.read == nil:
		return nil, false, nil // a folder or other entry
	}
	b, err := st.read()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", rel, err)
	}
	return b, true, nil
}
