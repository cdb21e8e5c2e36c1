package runbenchmark

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline"
)

// RunFolderIgnore is the .gitignore written into the run folder of
// skillgate run-benchmark, so its results, stores and reports stay out of
// the repository without an edit to the user's own .gitignore, as the
// run folders of skillgate init's suites and benchmark-skill's reports do.
const RunFolderIgnore = "# skillgate's run folder: results, stores and reports, rebuilt by skillgate run-benchmark\n*\n"

// IgnoreRunFolder writes out/.gitignore when the run folder has none.
func IgnoreRunFolder(out string) error {
	p := filepath.Join(out, ".gitignore")
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := pipeline.WriteFile(p, []byte(RunFolderIgnore)); err != nil {
		return fmt.Errorf("ignore run folder %s: %w", out, err)
	}
	return nil
}
