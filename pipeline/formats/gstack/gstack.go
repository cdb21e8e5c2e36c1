// Package gstack reads gstack's skill-eval tasks (tasks.json, its
// tasks.ext.json sidecar and tasks.lock.json) into suites, writes the
// small suite that names them, and holds what a paid run locks. The CUE
// package skillgate.dev/schema/formats/gstack turns the tasks into cases.
package gstack

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/encoding/json"

	"github.com/skillgate/skillgate/pipeline"
)

// The files of a gstack skill's evals, beside each other.
const (
	FileTasks = "tasks.json"
	FileExt   = "tasks.ext.json"
	FileLock  = "tasks.lock.json"
)

// pathFile is formats.gstack.file: tasks.json named, not embedded.
var pathFile = cue.ParsePath("file")

// Read reads the tasks file that formats.gstack.file names (relative to the
// suite folder dir), and the sidecar and lock beside it when they exist,
// into formats.gstack.read, with positions in those files. A suite that
// embeds the files names none, and gets an empty read.
func Read(dir string, in cue.Value) (ast.Expr, error) {
	fv := in.LookupPath(pathFile)
	file, err := fv.String()
	if !fv.Exists() || err != nil {
		return ast.NewStruct(), nil // embedded, or a file validation refuses
	}
	tasks := filepath.Join(dir, filepath.FromSlash(file))
	expr, err := extract(tasks)
	if err != nil {
		return nil, err
	}
	folder := filepath.Dir(tasks)
	ext, err := extractBeside(folder, FileExt, file)
	if err != nil {
		return nil, err
	}
	lock, err := extractBeside(folder, FileLock, file)
	if err != nil {
		return nil, err
	}
	return ast.NewStruct(
		"tasks", expr,
		"ext", ext,
		"lock", lock,
		"dir", ast.NewString(filepath.ToSlash(filepath.Dir(filepath.FromSlash(file)))),
	), nil
}

// extractBeside reads the file name in folder, when it exists, as embed's
// glob gives it: a struct from its path (beside the tasks file's) to its
// data; an empty struct when it does not exist.
func extractBeside(folder, name, tasksFile string) (ast.Expr, error) {
	p := filepath.Join(folder, name)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return ast.NewStruct(), nil
	}
	expr, err := extract(p)
	if err != nil {
		return nil, err
	}
	key := filepath.ToSlash(filepath.Join(filepath.Dir(filepath.FromSlash(tasksFile)), name))
	return ast.NewStruct(&ast.Field{Label: ast.NewString(key), Value: expr}), nil
}

// extract reads a JSON file into CUE syntax positioned in that file; a
// syntax error comes back at its line and column.
func extract(path string) (ast.Expr, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read gstack file %s: %w", path, err)
	}
	return json.Extract(path, b)
}

// Import writes into out a suite that reads gstack's tasks file src (or the
// tasks.json in the folder src) where it is, and returns the files
// written. A suite folder that is the tasks file's or above it embeds the
// files; any other names the file, for skillgate to read. It refuses a
// folder that already holds CUE files.
func Import(src, out string) ([]string, error) {
	tasks := src
	if st, err := os.Stat(src); err != nil {
		return nil, fmt.Errorf("import gstack tasks %s: %w", src, err)
	} else if st.IsDir() {
		tasks = filepath.Join(src, FileTasks)
	}
	if filepath.Base(tasks) != FileTasks {
		return nil, fmt.Errorf("import gstack tasks %s: gstack's tasks file is named %s", src, FileTasks)
	}
	if _, err := os.Stat(tasks); err != nil {
		return nil, fmt.Errorf("import gstack tasks %s: %w", src, err)
	}
	if cues, _ := filepath.Glob(filepath.Join(out, "*.cue")); len(cues) > 0 {
		return nil, fmt.Errorf("import gstack tasks %s: %s already holds a suite (%s); choose an empty folder", src, out, filepath.Base(cues[0]))
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("import gstack tasks %s: %w", src, err)
	}
	absTasks, err := filepath.Abs(tasks)
	if err != nil {
		return nil, fmt.Errorf("import gstack tasks %s: %w", src, err)
	}
	rel, err := filepath.Rel(absOut, filepath.Dir(absTasks))
	if err != nil {
		return nil, fmt.Errorf("import gstack tasks %s: %w", src, err)
	}
	rel = filepath.ToSlash(rel)
	skill := suiteName(filepath.Base(filepath.Dir(absTasks)))
	if err := pipeline.WriteFile(filepath.Join(out, "suite.cue"), []byte(suiteSource(skill, rel))); err != nil {
		return nil, fmt.Errorf("import gstack tasks %s: %w", src, err)
	}
	return []string{"suite.cue"}, nil
}

// suiteName makes a folder's name a suite name: lower case, and any other
// character than a letter, a digit, '.', '_' or '-' a '-'.
func suiteName(folder string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(folder) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	name := strings.TrimLeft(b.String(), "._-")
	if name == "" {
		return "gstack"
	}
	return name
}

// suiteSource is the suite Import writes: the tasks folder at rel (from
// the suite folder), embedded when rel does not climb, named otherwise.
func suiteSource(skill, rel string) string {
	var formats, ext string
	if rel == ".." || strings.HasPrefix(rel, "../") {
		formats = fmt.Sprintf("\t// skillgate reads tasks.json, and %s and %s beside it.\n\tformats: gstack: file: %q\n", FileExt, FileLock, rel+"/"+FileTasks)
	} else {
		ext = "@extern(embed)\n\n"
		prefix := ""
		if rel != "." {
			prefix = rel + "/"
		}
		formats = fmt.Sprintf("\tformats: gstack: {\n\t\ttasks: _ @embed(file=%s)\n\t\text:   _ @embed(glob=%s,allowEmptyGlob)\n\t\tlock:  _ @embed(glob=%s,allowEmptyGlob)\n",
			prefix+FileTasks, prefix+FileExt, prefix+FileLock)
		if rel != "." {
			formats += fmt.Sprintf("\t\tdir:   %q\n", rel)
		}
		formats += "\t}\n"
	}
	return ext + fmt.Sprintf(`package evals

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/formats/gstack"
	"skillgate.dev/schema/policies"
)

// gstack's skill-eval tasks for %s, read where they are: tasks.json
// stays the source of truth.
schema.#Suite & gstack.#Suite & {
	name: %q

%s
	// seed.sh and the checks need git: skillgate's Debian userland has it
	// (add tools with debian: packages: [...]).
	environments: gstack: debian: {}

	// The arms skill-eval's --arms before=DIR,after=DIR,none compares:
	// name the skill's folder before and after the change, for example
	//	skills: {
	//		before: {path: "PATH/TO/%s-before", name: %q}
	//		after:  {path: "PATH/TO/%s", name: %q}
	//	}
	//	arms: {before: skills: ["before"], after: skills: ["after"], none: skills: []}
	arms: none: skills: []

	agent: agents.claudeCode
	// tasks.ext.json's judge lines are graded by a blinded judge (it sees
	// the task and the answer, never the arm): the agent's provider and
	// model, as skill-eval's host; name another judge here if you like.
	judge: {provider: agent.provider, model: agent.model}
	trials: 3
	policy: policies.gstack
}
`, skill, skill, formats, skill, skill, skill, skill)
}
