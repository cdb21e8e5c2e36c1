package mutate

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// ReadSkill reads the skill key's folder dir, and checks it is the tree
// the plan holds, so the mutants derive from the bytes the plan pinned.
func ReadSkill(key, dir string, want plan.Tree) (Skill, error) {
	files, err := readFiles(dir)
	if err != nil {
		return Skill{}, fmt.Errorf("read skill %s: %w", key, err)
	}
	sk := Skill{Key: key, Files: files}
	if got := TreeOf(sk.Files); got.Digest != want.Digest {
		return Skill{}, fmt.Errorf("read skill %s: %s changed since the plan was compiled (%s)", key, dir, summary(plan.DiffTrees(want, got)))
	}
	return sk, nil
}

// ReadFolder reads a hand-written mutant of skill from its folder dir.
func ReadFolder(id, skill, dir string) (Mutant, error) {
	files, err := readFiles(dir)
	if err != nil {
		return Mutant{}, fmt.Errorf("read mutant %s: %w", id, err)
	}
	if _, ok := files["SKILL.md"]; !ok {
		return Mutant{}, fmt.Errorf("read mutant %s: %s has no SKILL.md", id, dir)
	}
	return Mutant{ID: id, Skill: skill, Operator: Folder, What: "the hand-written skill folder " + filepath.Base(dir), Tree: TreeOf(files), Files: files}, nil
}

// readFiles reads a folder's files by slash-separated path.
func readFiles(dir string) (map[string]File, error) {
	files := map[string]File{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var f File
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			f = File{Data: []byte(filepath.ToSlash(target)), Mode: "symlink"}
		case info.Mode().IsRegular():
			if f.Data, err = os.ReadFile(p); err != nil {
				return err
			}
			if info.Mode()&0o111 != 0 {
				f.Mode = "exec"
			}
		default:
			return fmt.Errorf("%s is not a regular file, folder or symlink", rel)
		}
		files[filepath.ToSlash(rel)] = f
		return nil
	})
	return files, err
}

// summary names the first changed file and how many more.
func summary(ch []plan.TreeChange) string {
	if len(ch) == 0 {
		return "no file differs"
	}
	s := ch[0].Path + " " + ch[0].Change
	if len(ch) > 1 {
		s += fmt.Sprintf(" and %d more", len(ch)-1)
	}
	return s
}

// Write writes a mutant's tree into dir, which must not exist yet or hold
// exactly that tree (a mutant already written); it is written beside dir
// and renamed, so a folder is never half-written.
func Write(m Mutant, dir string) error {
	if t, err := plan.HashTree(dir); err == nil {
		if t.Digest == m.Tree.Digest {
			return nil
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("write mutant %s: %w", m.ID, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("write mutant %s: %w", m.ID, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".mutant-")
	if err != nil {
		return fmt.Errorf("write mutant %s: %w", m.ID, err)
	}
	defer os.RemoveAll(tmp)
	for rel, f := range m.Files {
		p := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write mutant %s: %w", m.ID, err)
		}
		switch f.Mode {
		case "symlink":
			err = os.Symlink(string(f.Data), p)
		case "exec":
			err = os.WriteFile(p, f.Data, 0o755)
		default:
			err = os.WriteFile(p, f.Data, 0o644)
		}
		if err != nil {
			return fmt.Errorf("write mutant %s: %w", m.ID, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("write mutant %s: %w", m.ID, err)
	}
	return nil
}
