package pipeline

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillgate/skillgate/schema"
)

// WriteSchema vendors the embedded schema into dir/cue.mod/pkg so that plain
// `cue` and editors resolve the suite's imports with no registry. It writes
// cue.mod/module.cue too when the folder has none. It returns the files
// written, relative to dir.
func WriteSchema(dir string) ([]string, error) {
	var written []string
	mod := filepath.Join(dir, "cue.mod", "module.cue")
	if _, err := os.Stat(mod); os.IsNotExist(err) {
		if err := WriteFile(mod, []byte(moduleFile)); err != nil {
			return nil, err
		}
		written = append(written, filepath.Join("cue.mod", "module.cue"))
	}
	pkg := filepath.Join(dir, "cue.mod", "pkg", filepath.FromSlash(schema.ImportPath))
	if err := os.RemoveAll(pkg); err != nil {
		return nil, fmt.Errorf("clear vendored schema: %w", err)
	}
	files := schema.Files()
	for _, p := range schema.Paths() {
		if err := WriteFile(filepath.Join(pkg, filepath.FromSlash(p)), files[p]); err != nil {
			return nil, err
		}
		written = append(written, filepath.Join("cue.mod", "pkg", filepath.FromSlash(schema.ImportPath), filepath.FromSlash(p)))
	}
	return written, nil
}

// WriteFile writes a file atomically (a temporary file, then a rename),
// making its folder.
func WriteFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
