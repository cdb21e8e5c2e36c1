package suite

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/skillgate/skillgate/pipeline/fswalk"

	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/encoding/yaml"
)

// resolve turns a suite-relative path into an absolute one inside the
// repository, following symlinks, or says why it cannot.
func (s *Suite) Resolve(rel string) (string, error) {
	p := filepath.Join(s.Dir, filepath.FromSlash(rel))
	if !Within(s.Root, p) {
		return "", fmt.Errorf("path %s leaves the repository", rel)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("path %s: %w", rel, unwrapPathError(err))
	}
	rootReal, err := filepath.EvalSymlinks(s.Root)
	if err != nil {
		return "", err
	}
	if !Within(rootReal, real) {
		return "", fmt.Errorf("path %s resolves through a symlink outside the repository", rel)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("path %s: %w", rel, unwrapPathError(err))
	}
	if !st.IsDir() {
		return "", fmt.Errorf("path %s is not a folder", rel)
	}
	return p, nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// within reports whether p is root or below it.
func Within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// checkTree checks that no symlink in the folder leaves the repository.
func checkTree(dir, root string) error { return checkLinks(dir, root, false) }

// checkLinks checks every symlink of dir, in one walk of its folders: none
// is broken or leaves the repository and, with inFolder, none but dir
// itself leaves dir. A link that leaves the repository is named before
// one that leaves the folder alone, wherever each is.
func checkLinks(dir, root string, inFolder bool) error {
	rootReal, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	var leaves error
	err = fswalk.Walk(dir, nil, func(p string) error {
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		target, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("symlink %s is broken", rel)
		}
		if !Within(rootReal, target) {
			return fmt.Errorf("symlink %s points outside the repository", rel)
		}
		if !inFolder || leaves != nil || p == dir {
			return nil
		}
		if target, err = os.Readlink(p); err != nil {
			return err
		}
		to := path.Join(path.Dir(rel), filepath.ToSlash(target))
		if filepath.IsAbs(target) || to == ".." || strings.HasPrefix(to, "../") {
			leaves = fmt.Errorf("symlink %s points to %s, outside the folder: a cell's workspace holds the folder's files alone; copy the file in, or link within the folder", rel, target)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return leaves
}

// checkCaseTree checks a fixture or overlay folder: no symlink in it leaves
// the repository, and none leaves the folder itself, since a cell's
// workspace holds the folder's files alone and a link out of it would
// make every cell of the case invalid.
func checkCaseTree(dir, root string) error { return checkLinks(dir, root, true) }

// checkSkillFolder checks a skill's SKILL.md front matter.
func checkSkillFolder(dir, root, name string) error {
	if err := checkTree(dir, root); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(dir, "SKILL.md"))
	if err != nil {
		return fmt.Errorf("skill folder has no SKILL.md")
	}
	fm, err := FrontMatter(b)
	if err != nil {
		return fmt.Errorf("read SKILL.md front matter: %v", err)
	}
	if fm["name"] == "" {
		return fmt.Errorf("SKILL.md front matter has no name")
	}
	if fm["description"] == "" {
		return fmt.Errorf("SKILL.md front matter has no description")
	}
	if fm["name"] != name {
		return fmt.Errorf("SKILL.md names the skill %q but the suite installs it as %q", fm["name"], name)
	}
	return nil
}

// FrontMatter reads the string fields of a Markdown file's YAML front matter.
func FrontMatter(md []byte) (map[string]string, error) {
	md = bytes.ReplaceAll(md, []byte("\r\n"), []byte("\n"))
	if !bytes.HasPrefix(md, []byte("---\n")) {
		return nil, fmt.Errorf("no front matter (the file must start with ---)")
	}
	rest := md[4:]
	end := bytes.Index(rest, []byte("\n---"))
	if end < 0 {
		return nil, fmt.Errorf("front matter is not closed by ---")
	}
	f, err := yaml.Extract("SKILL.md", rest[:end+1])
	if err != nil {
		return nil, err
	}
	v := cuecontext.New().BuildFile(f)
	if v.Err() != nil {
		return nil, v.Err()
	}
	out := map[string]string{}
	it, err := v.Fields()
	if err != nil {
		return nil, fmt.Errorf("front matter is not a mapping")
	}
	for it.Next() {
		if s, err := it.Value().String(); err == nil {
			out[it.Selector().Unquoted()] = strings.TrimSpace(s)
		}
	}
	return out, nil
}

// checkReference checks a NAME/PATH reference against the skills installed
// as NAME.
func (s *Suite) checkReference(ref string) error {
	name, rel, ok := strings.Cut(ref, "/")
	if !ok || rel == "" {
		return fmt.Errorf("reference %q must be SKILL/PATH", ref)
	}
	found := false
	for _, sk := range s.Skills {
		if sk.Name != name {
			continue
		}
		found = true
		if dir, err := s.Resolve(sk.Path); err == nil {
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err == nil {
				return nil
			}
		}
	}
	if !found {
		return fmt.Errorf("reference %q names skill %q, which no skill of the suite installs", ref, name)
	}
	return fmt.Errorf("reference %q: no skill installed as %s has the file %s", ref, name, rel)
}
