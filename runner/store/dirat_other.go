//go:build !linux && !darwin

package store

import (
	"errors"
	"os"
	"path/filepath"
)

// dirAt is a folder whose files are stated and linked by name, by path
// where the system has no calls relative to an open folder.
type dirAt struct {
	path string
}

func openDirAt(path string) (dirAt, error) {
	info, err := os.Stat(path)
	if err != nil {
		return dirAt{}, err
	}
	if !info.IsDir() {
		return dirAt{}, &os.PathError{Op: "open", Path: path, Err: errors.New("not a folder")}
	}
	return dirAt{path: path}, nil
}

func (d dirAt) close() {}

// lstat is the stat of the file name in d, not following a symlink.
func (d dirAt) lstat(name string) (statAt, error) {
	info, err := os.Lstat(filepath.Join(d.path, name))
	if err != nil {
		return statAt{}, err
	}
	s := statAt{perm: uint32(info.Mode().Perm())}
	s.stat, s.stated = StatOf(info)
	switch {
	case info.Mode().IsRegular():
		s.kind = kindRegular
	case info.IsDir():
		s.kind = kindDir
	case info.Mode()&os.ModeSymlink != 0:
		s.kind = kindSymlink
	}
	return s, nil
}

// linkAt makes name in dst a hard link to name in src, the system's error
// unwrapped.
func linkAt(src dirAt, dst dirAt, name string) error {
	err := os.Link(filepath.Join(src.path, name), filepath.Join(dst.path, name))
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
