package runner

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBackendSeam: the Docker SDK is imported in runner/docker alone (tests
// included), so the move to another SDK or engine is local; the two
// backends meet only in runner/backend's neutral types: neither imports the
// other (tests and test helpers aside), nor does a room of the runner
// (images, cell, checks, readback); and the runner reaches the engine
// only through the backend interface: no file of the runner but backend.go
// names the Docker engine's type or connects to it.
func TestBackendSeam(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("find the module root: %v", err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			sdk := strings.HasPrefix(path, "github.com/docker/") || strings.HasPrefix(path, "github.com/moby/")
			if sdk && !strings.HasPrefix(rel, "runner/docker/") {
				t.Errorf("%s imports %s: only runner/docker may import the Docker SDK", rel, path)
			}
			const mod = "github.com/skillgate/skillgate/"
			if strings.HasSuffix(rel, "_test.go") {
				continue
			}
			rooms := [][2]string{{"runner/kube/", "runner/docker"}, {"runner/docker/", "runner/kube"}}
			for _, room := range []string{"backend", "images", "cell", "checks", "readback"} {
				rooms = append(rooms, [2]string{"runner/" + room + "/", "runner/docker"}, [2]string{"runner/" + room + "/", "runner/kube"})
			}
			for _, pair := range rooms {
				dir := path2dir(rel)
				if dir+"/" == pair[0] && strings.HasPrefix(path, mod+pair[1]) {
					t.Errorf("%s imports %s: the backends meet in runner/backend alone, and the runner's rooms reach them through it", rel, path)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: not the module", files, root)
	}

	runnerFiles, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range runnerFiles {
		if file == "backend.go" || strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "docker" && (sel.Sel.Name == "Engine" || sel.Sel.Name == "NewEngine") {
				t.Errorf("%s names docker.%s: the runner reaches the engine through backend (backend.go) alone", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}

// path2dir is the folder of a slash-separated file path.
func path2dir(rel string) string {
	if i := strings.LastIndex(rel, "/"); i >= 0 {
		return rel[:i]
	}
	return ""
}
