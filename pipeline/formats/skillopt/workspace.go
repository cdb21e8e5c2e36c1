package skillopt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"cuelang.org/go/cue/token"
	"golang.org/x/text/collate"
	"golang.org/x/text/language"

	"github.com/skillgate/skillgate/pipeline"
)

// Modes of an exported workspace, and the splits each one holds. SkillOpt
// never merges them: an optimizer sees only train and valid-seen, the
// held-out evaluation never sees frozen cases, and a release export holds
// the frozen cases alone.
const (
	ModeOptimize = "optimize"
	ModeEvaluate = "evaluate"
	ModeRelease  = "release"
)

// ModeSplits lists, by mode, the splits a workspace of that mode may hold.
var ModeSplits = map[string][]string{
	ModeOptimize: {"train", "valid-seen"},
	ModeEvaluate: {"valid-unseen", "transfer", "adversarial"},
	ModeRelease:  {"test-frozen"},
}

// Files and folders of an exported workspace.
const (
	FileManifest   = "workspace.json"
	DirData        = "data"
	DirCandidate   = "candidate/skills"
	DirCompanions  = "companions/skills"
	manifestSchema = 2
)

// Workspace is workspace.json, SkillOpt's manifest of one export, in its
// own field names.
type Workspace struct {
	SchemaVersion    int               `json:"schemaVersion"`
	Mode             string            `json:"mode"`
	OptimizationUnit string            `json:"optimizationUnit"`
	TargetSkill      string            `json:"targetSkill"`
	TargetReference  string            `json:"targetReference,omitempty"`
	CompanionSkills  []string          `json:"companionSkills"`
	MutablePaths     []string          `json:"mutablePaths"`
	ImmutablePaths   []string          `json:"immutablePaths"`
	ImmutableDigests map[string]string `json:"immutableDigests"`
	SkillRevisions   map[string]string `json:"skillRevisions"`
	Cases            []CaseRecord      `json:"cases"`
	CaseSetDigest    string            `json:"caseSetDigest"`
}

// CaseRecord is one case of the manifest's exact case set.
type CaseRecord struct {
	ID     string `json:"id"`
	Digest string `json:"digest"`
}

// SkillDir is the workspace-relative folder of an installed skill: the
// target under candidate/, a companion under companions/.
func (w *Workspace) SkillDir(skill string) string {
	if skill == w.TargetSkill {
		return DirCandidate + "/" + skill
	}
	return DirCompanions + "/" + skill
}

// Skills are the target skill and its companions, the export's topology.
func (w *Workspace) Skills() []string {
	return append([]string{w.TargetSkill}, w.CompanionSkills...)
}

// sha256Hex is SkillOpt's digest form: lower-case hex, no algorithm prefix.
func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// fileDigest is the hex SHA-256 of a file's bytes, as workspace.json records it.
func fileDigest(p string) (string, error) {
	d, err := pipeline.FileDigest(p)
	if err != nil {
		return "", err
	}
	return d.Encoded(), nil
}

// localeOrder sorts the way SkillOpt's String.prototype.localeCompare does
// (the root collation: case folded first, punctuation before digits before
// letters), so a skill revision computed here is the one SkillOpt wrote.
var localeOrder = collate.New(language.Und)

// regularFiles lists the ordinary files below root, root-relative with
// slashes, in SkillOpt's walk order; symlinks and other kinds are skipped
// as SkillOpt's walk skips them.
func regularFiles(root string) ([]string, error) {
	var out []string
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		sort.SliceStable(entries, func(i, j int) bool {
			return localeOrder.CompareString(entries[i].Name(), entries[j].Name()) < 0
		})
		for _, e := range entries {
			p := path.Join(rel, e.Name())
			switch {
			case e.IsDir():
				if err := walk(p); err != nil {
					return err
				}
			case e.Type().IsRegular():
				out = append(out, p)
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, err
	}
	return out, nil
}

// TreeRevision is SkillOpt's logical revision of a skill tree: the hex
// SHA-256 of "path\x00digest" records, one per ordinary file, sorted by
// path and joined by newlines.
func TreeRevision(root string) (string, error) {
	files, err := regularFiles(root)
	if err != nil {
		return "", err
	}
	sort.SliceStable(files, func(i, j int) bool { return localeOrder.CompareString(files[i], files[j]) < 0 })
	records := make([]string, 0, len(files))
	for _, f := range files {
		d, err := fileDigest(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return "", err
		}
		records = append(records, f+"\x00"+d)
	}
	return sha256Hex([]byte(strings.Join(records, "\n"))), nil
}

// TreeBytes is the size of every ordinary file below root: SkillOpt's
// targetSkillBytes for an installed target skill.
func TreeBytes(root string) (int64, error) {
	files, err := regularFiles(root)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, f := range files {
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return 0, err
		}
		n += st.Size()
	}
	return n, nil
}

// CaseSetDigest is SkillOpt's digest of an exact case set: the hex SHA-256
// of "id:digest" lines, sorted.
func CaseSetDigest(cases []CaseRecord) string {
	lines := make([]string, len(cases))
	for i, c := range cases {
		lines[i] = c.ID + ":" + c.Digest
	}
	slices.Sort(lines)
	return sha256Hex([]byte(strings.Join(lines, "\n")))
}

// CaseDigest is SkillOpt's digest of one exported case: the hex SHA-256 of
// the case as SkillOpt serializes it after parsing (its schema's field
// order, defaults filled in). An exported line is that serialization, so
// its digest is the digest of the line; a line reformatted by hand keeps
// its digest as long as its values do.
func CaseDigest(line []byte) (string, error) {
	var c EvalCase
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return "", err
	}
	c.fillDefaults()
	b, err := marshalJS(c)
	if err != nil {
		return "", err
	}
	return sha256Hex(b), nil
}

// marshalJS serializes v as JavaScript's JSON.stringify does: no HTML
// escapes, U+2028 and U+2029 left as they are.
func marshalJS(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	b = bytes.ReplaceAll(b, []byte(`\u2028`), []byte("\u2028"))
	b = bytes.ReplaceAll(b, []byte(`\u2029`), []byte("\u2029"))
	return b, nil
}

// problem is one failed workspace check, with the file it is about and a
// locator of the value in that file a message should point at.
type problem struct {
	file string // workspace-relative: workspace.json, data/x.jsonl, candidate/...
	at   locator
	msg  string
}

// locator finds where a problem points: a path of labels and indexes into
// workspace.json, or a line of a data file.
type locator struct {
	manifest []any     // string labels and int indexes into workspace.json
	line     int       // 1-based line of a data file
	offset   int       // the line's offset in its file
	pos      token.Pos // the value's own position, when known
}

// verifyFiles is SkillOpt's ownership and immutable-bytes check: every
// mutable path exists, every immutable path has its digest and its bytes,
// no digest is unowned, and no skill file is unregistered.
func verifyFiles(root string, w *Workspace) []problem {
	var out []problem
	immutable := map[string]bool{}
	for _, p := range w.ImmutablePaths {
		immutable[p] = true
	}
	mutable := map[string]bool{}
	for i, p := range w.MutablePaths {
		mutable[p] = true
		if immutable[p] {
			out = append(out, problem{FileManifest, locator{manifest: []any{"mutablePaths", i}}, fmt.Sprintf("%s is both mutable and immutable", p)})
		}
		if why := insidePath(root, p); why != "" {
			out = append(out, problem{FileManifest, locator{manifest: []any{"mutablePaths", i}}, fmt.Sprintf("mutable path %s %s", p, why)})
		} else if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			out = append(out, problem{FileManifest, locator{manifest: []any{"mutablePaths", i}}, fmt.Sprintf("mutable path %s is missing", p)})
		}
	}
	for i, p := range w.ImmutablePaths {
		want, ok := w.ImmutableDigests[p]
		if why := insidePath(root, p); why != "" {
			out = append(out, problem{FileManifest, locator{manifest: []any{"immutablePaths", i}}, fmt.Sprintf("immutable path %s %s", p, why)})
			continue
		}
		if !ok {
			out = append(out, problem{FileManifest, locator{manifest: []any{"immutablePaths", i}}, fmt.Sprintf("immutable path %s has no digest in immutableDigests", p)})
			continue
		}
		got, err := fileDigest(filepath.Join(root, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			out = append(out, problem{FileManifest, locator{manifest: []any{"immutablePaths", i}}, fmt.Sprintf("immutable file %s is missing from the workspace", p)})
		case err != nil:
			out = append(out, problem{FileManifest, locator{manifest: []any{"immutablePaths", i}}, fmt.Sprintf("immutable file %s cannot be verified: %v", p, unwrapPath(err))})
		case got != want:
			out = append(out, problem{p, locator{manifest: []any{"immutableDigests", p}}, fmt.Sprintf("immutable file %s changed: its sha256 is %s, workspace.json records %s", p, short(got), short(want))})
		}
	}
	for _, p := range sortedKeys(w.ImmutableDigests) {
		if !immutable[p] {
			out = append(out, problem{FileManifest, locator{manifest: []any{"immutableDigests", p}}, fmt.Sprintf("immutableDigests names %s, which immutablePaths does not", p)})
		}
	}
	for _, dir := range []string{DirCandidate, DirCompanions} {
		files, err := regularFiles(filepath.Join(root, filepath.FromSlash(dir)))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				out = append(out, problem{dir, locator{manifest: []any{"immutablePaths"}}, fmt.Sprintf("skill folder %s cannot be read: %v", dir, unwrapPath(err))})
			}
			continue
		}
		for _, f := range files {
			p := dir + "/" + f
			if !immutable[p] && !mutable[p] {
				out = append(out, problem{p, locator{manifest: []any{"immutablePaths"}}, fmt.Sprintf("skill file %s is in neither immutablePaths nor mutablePaths", p)})
			}
		}
	}
	return out
}

// verifySkills recomputes each skill tree's logical revision.
func verifySkills(root string, w *Workspace) []problem {
	var out []problem
	for _, s := range w.Skills() {
		if !skillID.MatchString(s) {
			continue // not a skill name: the format's schema says so, and no path is made of it
		}
		dir := w.SkillDir(s)
		at := locator{manifest: []any{"skillRevisions", s}}
		want, ok := w.SkillRevisions[s]
		got, err := TreeRevision(filepath.Join(root, filepath.FromSlash(dir)))
		switch {
		case err != nil:
			out = append(out, problem{dir, at, fmt.Sprintf("skill %s: revision of %s cannot be computed: %v", s, dir, unwrapPath(err))})
		case !ok:
			out = append(out, problem{FileManifest, locator{manifest: []any{"skillRevisions"}}, fmt.Sprintf("skill %s has no revision in skillRevisions", s)})
		case got != want:
			out = append(out, problem{dir, at, fmt.Sprintf("skill %s changed: the revision of %s is %s, workspace.json records %s", s, dir, short(got), short(want))})
		}
	}
	for _, s := range sortedKeys(w.SkillRevisions) {
		if !slices.Contains(w.Skills(), s) {
			out = append(out, problem{FileManifest, locator{manifest: []any{"skillRevisions", s}}, fmt.Sprintf("skillRevisions names %s, which is neither targetSkill nor a companion", s)})
		}
	}
	return out
}

// checkManifest is the manifest's own consistency, as SkillOpt's schema
// refines it.
func checkManifest(w *Workspace) []problem {
	var out []problem
	add := func(loc []any, format string, args ...any) {
		out = append(out, problem{FileManifest, locator{manifest: loc}, fmt.Sprintf(format, args...)})
	}
	seen := map[string]bool{}
	for i, c := range w.CompanionSkills {
		if seen[c] {
			add([]any{"companionSkills", i}, "companion skill %s is listed twice", c)
		}
		seen[c] = true
		if c == w.TargetSkill {
			add([]any{"companionSkills", i}, "targetSkill %s cannot also be a companion skill", c)
		}
	}
	for _, list := range []struct {
		field string
		paths []string
	}{{"mutablePaths", w.MutablePaths}, {"immutablePaths", w.ImmutablePaths}} {
		seen := map[string]bool{}
		for i, p := range list.paths {
			if seen[p] {
				add([]any{list.field, i}, "%s lists %s twice", list.field, p)
			}
			seen[p] = true
		}
	}
	ids := map[string]bool{}
	for i, c := range w.Cases {
		if ids[c.ID] {
			add([]any{"cases", i, "id"}, "case %s is listed twice", c.ID)
		}
		ids[c.ID] = true
	}
	switch {
	case w.Mode == ModeOptimize && len(w.MutablePaths) != 1:
		add([]any{"mutablePaths"}, "an optimize workspace has exactly one mutable path, not %d", len(w.MutablePaths))
	case w.Mode != ModeOptimize && len(w.MutablePaths) != 0:
		add([]any{"mutablePaths"}, "an %s workspace is immutable: it has no mutable path", w.Mode)
	}
	switch {
	case w.OptimizationUnit == "reference" && w.TargetReference == "":
		add([]any{"optimizationUnit"}, "reference optimization requires targetReference")
	case w.OptimizationUnit == "root-router" && w.TargetReference != "":
		add([]any{"targetReference"}, "root-router optimization cannot set targetReference")
	}
	return out
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// unwrapPath drops the path an fs error repeats, since the message names it.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// decodeManifest decodes workspace.json, refusing a field SkillOpt's
// manifest does not have.
func decodeManifest(b []byte, w *Workspace) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(w); err != nil {
		return err
	}
	if w.SchemaVersion != manifestSchema {
		return fmt.Errorf("schemaVersion %d is not SkillOpt's manifest version %d", w.SchemaVersion, manifestSchema)
	}
	if ModeSplits[w.Mode] == nil {
		return fmt.Errorf("mode %q is none of optimize, evaluate, release", w.Mode)
	}
	return nil
}
