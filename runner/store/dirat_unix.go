//go:build linux || darwin

package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// dirAt is an open folder whose files are stated and linked by name,
// relative to it: no path is resolved again per file.
type dirAt struct {
	fd   int
	path string
}

func openDirAt(path string) (dirAt, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return dirAt{fd: -1}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return dirAt{fd: fd, path: path}, nil
}

func (d dirAt) close() {
	if d.fd >= 0 {
		unix.Close(d.fd)
	}
}

// lstat is the stat of the file name in d, not following a symlink.
func (d dirAt) lstat(name string) (statAt, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return statAt{}, &os.PathError{Op: "lstat", Path: d.path + "/" + name, Err: err}
	}
	s := statAt{perm: uint32(st.Mode) & 0o777, stated: true, stat: FileStat{
		Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size, Mode: uint32(st.Mode),
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(),
	}}
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFREG:
		s.kind = kindRegular
	case unix.S_IFDIR:
		s.kind = kindDir
	case unix.S_IFLNK:
		s.kind = kindSymlink
	}
	return s, nil
}

// linkAt makes name in dst a hard link to name in src (a symlink is not
// followed). The error is the system's, unwrapped, so callers tell a link
// refused across file systems.
func linkAt(src dirAt, dst dirAt, name string) error {
	return unix.Linkat(src.fd, name, dst.fd, name, 0)
}
