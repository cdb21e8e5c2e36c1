//go:build linux && (amd64 || arm64)

package plan

import (
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A listing is an open folder and its entries by name. Its files are
// lstat'ed by name from the folder (fstatat), not by path from the root.
type listing struct {
	f     *os.File
	fd    int
	p     string
	infos []statInfo
}

// openList lists the folder p as os.ReadDir does, with its errors.
func openList(p string) (*listing, []os.DirEntry, error) {
	var fd int
	err := eintr(func() (err error) {
		fd, err = unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
		return err
	})
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	es, err := f.ReadDir(-1)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	slices.SortFunc(es, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return &listing{f: f, fd: fd, p: p, infos: make([]statInfo, len(es))}, es, nil
}

// lstat is the Lstat of the i-th entry, name, as the entry's Info gives
// it, with its error.
func (l *listing) lstat(i int, name string) (os.FileInfo, error) {
	var st unix.Stat_t
	err := eintr(func() error { return unix.Fstatat(l.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: l.p + "/" + name, Err: err}
	}
	info := &l.infos[i]
	info.name = name
	info.sys = syscall.Stat_t{
		Dev: st.Dev, Ino: st.Ino, Nlink: st.Nlink, Mode: st.Mode, Uid: st.Uid, Gid: st.Gid, Rdev: st.Rdev,
		Size: st.Size, Blksize: st.Blksize, Blocks: st.Blocks,
		Atim: syscall.Timespec(st.Atim), Mtim: syscall.Timespec(st.Mtim), Ctim: syscall.Timespec(st.Ctim),
	}
	return info, nil
}

func (l *listing) close() { l.f.Close() }

func eintr(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// statInfo is the FileInfo os.Lstat gives, Sys a *syscall.Stat_t.
type statInfo struct {
	name string
	sys  syscall.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.sys.Size }
func (s *statInfo) ModTime() time.Time { return time.Unix(s.sys.Mtim.Unix()) }
func (s *statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s *statInfo) Sys() any           { return &s.sys }

func (s *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.sys.Mode & 0o777)
	switch s.sys.Mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if s.sys.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.sys.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.sys.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
