package suite

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline"

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
		if err := pipeline.WriteFile(mod, []byte(moduleFile)); err != nil {
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
		if err := pipeline.WriteFile(filepath.Join(pkg, filepath.FromSlash(p)), files[p]); err != nil {
			return nil, err
		}
		written = append(written, filepath.Join("cue.mod", "pkg", filepath.FromSlash(schema.ImportPath), filepath.FromSlash(p)))
	}
	return written, nil
}
