package plan

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// PlanOf compiles a diff or run target: a plan file or a suite folder, as
// it is now when rev is empty, else as it was at that git revision.
func PlanOf(target, rev string) (*Plan, error) {
	if rev != "" {
		return PlanAtRevision(target, rev)
	}
	st, err := os.Stat(target)
	if err != nil {
		return nil, fmt.Errorf("read target: %w", err)
	}
	if st.IsDir() {
		return CompileDir(target)
	}
	return ReadPlan(target)
}

// PlanAtRevision compiles the suite folder dir as it was at git revision
// rev. The revision is read with `git archive` into a temporary folder; the
// working tree is never touched.
func PlanAtRevision(dir, rev string) (*Plan, error) {
	return AtRevision(dir, rev, Compile)
}

// AtRevision loads the suite folder dir as it was at git revision rev and
// gives it to compile, while the revision's files exist: a plan other
// than the suite's own (a mutate run's) is compiled from them too.
func AtRevision(dir, rev string, compile func(*suite.Suite) (*Plan, error)) (*Plan, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve suite %s: %w", dir, err)
	}
	top, err := git(abs, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("find repository of %s: %w", dir, err)
	}
	top = strings.TrimSpace(top)
	topReal, _ := filepath.EvalSymlinks(top)
	absReal, _ := filepath.EvalSymlinks(abs)
	rel, err := filepath.Rel(topReal, absReal)
	if err != nil {
		return nil, fmt.Errorf("locate suite %s in %s: %w", dir, top, err)
	}
	tmp, err := os.MkdirTemp("", "skillgate-rev-")
	if err != nil {
		return nil, fmt.Errorf("make revision folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("git", "archive", "--format=tar", rev)
	cmd.Dir = top
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("read revision %s: %w", rev, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("read revision %s: %w", rev, err)
	}
	xerr := extractTar(out, tmp)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("read revision %s: %s", rev, strings.TrimSpace(stderr.String()))
	}
	if xerr != nil {
		return nil, fmt.Errorf("read revision %s: %w", rev, xerr)
	}
	suiteDir := filepath.Join(tmp, rel)
	if _, err := os.Stat(suiteDir); err != nil {
		return nil, fmt.Errorf("read revision %s: %s does not exist there", rev, filepath.ToSlash(rel))
	}
	s, err := suite.LoadSuiteIn(suiteDir, tmp)
	if err != nil {
		return nil, err
	}
	return compile(s)
}

// SuiteGitRevision is where the repository holding the suite folder
// stands: its HEAD revision, and whether the suite folder, a skill or a
// fixture of the plan has changes not committed (untracked files count).
// The run folder out, when it lies inside the suite, is left out. nil
// outside a git repository, or in one with no commit.
func SuiteGitRevision(p *Plan, suiteDir, out string) *GitRevision {
	if suiteDir == "" {
		return nil
	}
	rev, err := git(suiteDir, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return nil
	}
	args := []string{"status", "--porcelain", "--untracked-files=all", "--", "."}
	for _, sk := range p.Skills {
		args = append(args, filepath.FromSlash(sk.Path))
	}
	for fx := range p.Fixtures {
		args = append(args, filepath.FromSlash(fx))
	}
	if rel, err := filepath.Rel(suiteDir, out); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		args = append(args, ":(exclude)"+filepath.ToSlash(rel))
	}
	status, err := git(suiteDir, args...)
	if err != nil {
		return nil
	}
	return &GitRevision{Revision: strings.TrimSpace(rev), Dirty: strings.TrimSpace(status) != ""}
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", errors.New(msg)
		}
		return "", err
	}
	return string(out), nil
}

// extractTar writes a tar stream under dir, refusing entries that leave it.
func extractTar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !suite.Within(dir, p) {
			return fmt.Errorf("archive entry %s leaves the folder", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, p); err != nil {
				return err
			}
		}
	}
}
