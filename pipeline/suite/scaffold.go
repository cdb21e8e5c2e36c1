package suite

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/skillgate/skillgate/pipeline"

	"cuelang.org/go/cue/format"
)

var nonName = regexp.MustCompile(`[^a-z0-9._-]+`)

// validName is the schema's #Name.
var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// SuiteName turns a folder name into a valid suite name.
func SuiteName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	n := strings.Trim(nonName.ReplaceAllString(strings.ToLower(filepath.Base(abs)), "-"), "-._")
	if n == "" {
		n = "suite"
	}
	return n
}

// ScaffoldOptions say what `skillgate init` scaffolds.
type ScaffoldOptions struct {
	// Skill is the user's own skill folder, as given (relative to the
	// current folder, or absolute). The suite names it where it is: it is
	// never copied. Empty scaffolds a stub skill inside the suite.
	Skill string
	// RunDir is the folder `skillgate run` will be started from: its run
	// folders go under RunDir/.skillgate, which init keeps out of git. Empty
	// means the suite folder only.
	RunDir string
	// NoiseFloor adds a replicate of the forced arm, so every run measures
	// its own noise floor.
	NoiseFloor bool
}

// Scaffolded is what Scaffold wrote.
type Scaffolded struct {
	// Suite is the suite's name, Skill the skill's installed name, and
	// SkillPath the skill folder as the suite names it (relative to the
	// suite folder).
	Suite, Skill, SkillPath string
	// Files are the files written in the suite folder, relative to it.
	Files []string
	// RunIgnore is the .gitignore written for the run folders outside the
	// suite folder, if any, as a path from RunDir.
	RunIgnore string
}

// Scaffold writes a new suite into dir whose first `skillgate run` passes
// its policy offline: a suite file whose agent is a labelled stand-in, a
// task case and a no-change control, a fixture, a .gitignore for run
// folders, the vendored schema for editors, and, without opts.Skill, a stub
// skill. It refuses a folder that already holds CUE files, a stub beside a
// skill the folder already holds, and a skill folder without a valid
// SKILL.md.
func Scaffold(dir string, opts ScaffoldOptions) (*Scaffolded, error) {
	if matches, _ := filepath.Glob(filepath.Join(dir, "*.cue")); len(matches) > 0 {
		return nil, fmt.Errorf("init suite: %s already holds CUE files (%s)", dir, filepath.Base(matches[0]))
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("init suite: %w", err)
	}
	out := &Scaffolded{Suite: SuiteName(dir)}
	var desc, marker string
	var files []scaffoldFile
	if opts.Skill == "" {
		if found := findSkill(absDir); found != "" {
			return nil, stubBesideSkill(dir, found)
		}
		out.Skill, out.SkillPath, desc = "example", "skills/example", stubDescription
		marker = descriptionMarker([]byte(stubFrontMatter), desc)
		files = append(files, scaffoldFile{"skills/example/SKILL.md", stubSkill})
	} else {
		out.Skill, out.SkillPath, desc, marker, err = wireSkill(opts.Skill, absDir)
		if err != nil {
			return nil, err
		}
	}
	files = append(files,
		scaffoldFile{"suite.cue", suiteFile(out.Suite, out.Skill, out.SkillPath, opts.Skill == "", opts.NoiseFloor)},
		scaffoldFile{"cases.cue", casesFile(out.Skill, marker)},
		scaffoldFile{"fixtures/example/NOTES.md", scaffoldNotes},
		scaffoldFile{".gitignore", runIgnore},
	)
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if _, err := os.Stat(p); err == nil {
			if f.path == ".gitignore" {
				continue // the user's own: left as it is
			}
			return out, fmt.Errorf("init suite: %s exists", p)
		}
		body := []byte(f.body)
		if strings.HasSuffix(f.path, ".cue") {
			// As cue fmt writes it, whatever the names' lengths.
			if b, err := format.Source(body); err == nil {
				body = b
			}
		}
		if err := pipeline.WriteFile(p, body); err != nil {
			return out, fmt.Errorf("init suite: %w", err)
		}
		out.Files = append(out.Files, f.path)
	}
	vendored, err := WriteSchema(dir)
	if err != nil {
		return out, fmt.Errorf("init suite: %w", err)
	}
	out.Files = append(out.Files, vendored...)
	if opts.RunDir != "" {
		if out.RunIgnore, err = ignoreRunFolders(opts.RunDir, absDir); err != nil {
			return out, fmt.Errorf("init suite: %w", err)
		}
	}
	return out, nil
}

type scaffoldFile struct{ path, body string }

// runIgnore keeps a suite folder's run folders out of git.
const runIgnore = "# skillgate's run folders: results, stores and reports, rebuilt by skillgate run\n.skillgate/\n"

// ignoreRunFolders writes RunDir/.skillgate/.gitignore, ignoring all of the
// folder, unless the suite folder's own .gitignore covers it (RunDir is the
// suite folder) or one is there already. It returns the file written, from
// RunDir.
func ignoreRunFolders(runDir, suiteDir string) (string, error) {
	abs, err := filepath.Abs(runDir)
	if err != nil {
		return "", err
	}
	if abs == suiteDir {
		return "", nil
	}
	p := filepath.Join(abs, ".skillgate", ".gitignore")
	if _, err := os.Stat(p); err == nil {
		return "", nil
	}
	if err := pipeline.WriteFile(p, []byte("# skillgate's run folders, rebuilt by skillgate run\n*\n")); err != nil {
		return "", err
	}
	return filepath.Join(".skillgate", ".gitignore"), nil
}

// wireSkill reads the user's skill folder for the suite in absDir: its
// name and description from SKILL.md, and its path from the suite folder.
// The skill must lie inside the suite's repository and outside the suite
// folder's own tree, so that nothing of the suite is installed with it.
func wireSkill(skill, absDir string) (name, rel, desc, marker string, err error) {
	abs, err := filepath.Abs(skill)
	if err != nil {
		return "", "", "", "", fmt.Errorf("init suite: %w", err)
	}
	st, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", "", "", "", fmt.Errorf("init suite: read skill %s: %w", skill, unwrapPathError(err))
	case !st.IsDir():
		return "", "", "", "", fmt.Errorf("init suite: --skill %s is not a folder: give the folder that holds SKILL.md", skill)
	}
	md, err := os.ReadFile(filepath.Join(abs, "SKILL.md"))
	if err != nil {
		return "", "", "", "", fmt.Errorf("init suite: %s holds no SKILL.md: --skill takes a skill folder, whose SKILL.md starts with front matter giving its name and description", skill)
	}
	fm, err := FrontMatter(md)
	if err != nil {
		return "", "", "", "", fmt.Errorf("init suite: read %s front matter: %v", filepath.Join(skill, "SKILL.md"), err)
	}
	name, desc = fm["name"], fm["description"]
	switch {
	case name == "":
		return "", "", "", "", fmt.Errorf("init suite: %s front matter has no name", filepath.Join(skill, "SKILL.md"))
	case desc == "":
		return "", "", "", "", fmt.Errorf("init suite: %s front matter has no description: agents choose a skill by it", filepath.Join(skill, "SKILL.md"))
	case !validName.MatchString(name):
		return "", "", "", "", fmt.Errorf("init suite: %s names the skill %q: a skill name is lower case letters, digits, '.', '_' and '-'", filepath.Join(skill, "SKILL.md"), name)
	}
	if Within(abs, absDir) {
		return "", "", "", "", fmt.Errorf("init suite: the suite folder %s is inside the skill folder %s, so the suite would be installed with the skill; put the suite beside it, such as suites/%s", displayDir(absDir), skill, name)
	}
	root := RepositoryRoot(absDir)
	if !Within(root, abs) {
		return "", "", "", "", fmt.Errorf("init suite: the skill %s is outside the repository of the suite folder (%s): a suite reads only files inside its repository; put the suite in the skill's repository", skill, root)
	}
	r, err := filepath.Rel(absDir, abs)
	if err != nil {
		return "", "", "", "", fmt.Errorf("init suite: %w", err)
	}
	return name, filepath.ToSlash(r), desc, descriptionMarker(frontMatterText(md), desc), nil
}

// displayDir is a folder as the user would write it from the current one.
func displayDir(abs string) string {
	if cwd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(cwd, abs); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
	}
	return abs
}

// errSkillFound ends findSkill's walk.
var errSkillFound = errors.New("found")

// findSkill returns the first SKILL.md in dir or a few levels below it, as
// a slash path from dir, skipping hidden and dependency folders.
func findSkill(dir string) string {
	found := ""
	seen := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			name := d.Name()
			if p != dir && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor" || name == "cue.mod") {
				return filepath.SkipDir
			}
			if strings.Count(rel, string(filepath.Separator)) >= 3 {
				return filepath.SkipDir
			}
			return nil
		}
		if seen++; seen > 10000 {
			return errSkillFound
		}
		if d.Name() == "SKILL.md" {
			found = filepath.ToSlash(rel)
			return errSkillFound
		}
		return nil
	})
	return found
}

// stubBesideSkill refuses a stub skill in a folder that holds a skill
// already, and says how to evaluate that one instead.
func stubBesideSkill(dir, found string) error {
	skill := filepath.ToSlash(filepath.Join(dir, filepath.Dir(filepath.FromSlash(found))))
	name := SuiteName(skill)
	if md, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(found))); err == nil {
		if fm, err := FrontMatter(md); err == nil && validName.MatchString(fm["name"]) {
			name = fm["name"]
		}
	}
	if filepath.Dir(filepath.FromSlash(found)) == "." {
		return fmt.Errorf("init suite: %s is a skill folder (%s): a suite inside it would be installed with the skill; keep the skill in a subfolder of the repository, then run skillgate init --skill PATH suites/%s", dir, found, name)
	}
	return fmt.Errorf("init suite: %s already holds a skill (%s), and init would add a stub skill beside it; to evaluate that skill, run: skillgate init --skill %s suites/%s", dir, found, skill, name)
}

// frontMatterText is the text between a Markdown file's --- lines.
func frontMatterText(md []byte) []byte {
	md = bytes.ReplaceAll(md, []byte("\r\n"), []byte("\n"))
	rest, ok := bytes.CutPrefix(md, []byte("---\n"))
	if !ok {
		return nil
	}
	if end := bytes.Index(rest, []byte("\n---")); end >= 0 {
		return rest[:end+1]
	}
	return nil
}

// descriptionMarker is the longest start of the skill's description, up to
// eight words, that the front matter holds verbatim: what an agent quoting
// the front matter shows whatever the YAML quoting or folding.
func descriptionMarker(frontMatter []byte, desc string) string {
	words := strings.Fields(desc)
	marker := ""
	for i := 1; i <= len(words) && i <= 8; i++ {
		m := strings.Join(words[:i], " ")
		if !bytes.Contains(frontMatter, []byte(m)) {
			break
		}
		marker = m
	}
	if marker == "" {
		return "description:"
	}
	return marker
}
