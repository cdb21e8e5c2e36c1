//go:build linux

package fswalk

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

var buffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// list gives dir's folders and symlinks in name order, reading its
// entries raw (linux_dirent64: inode, offset, record length, type, name).
func list(dir string) ([]entry, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	bp := buffers.Get().(*[]byte)
	defer buffers.Put(bp)
	buf := *bp
	var out []entry
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			break
		}
		for off := 0; off < n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			typ := buf[off+18]
			name := buf[off+19 : off+reclen]
			if i := slices.Index(name, 0); i >= 0 {
				name = name[:i]
			}
			off += reclen
			if typ == unix.DT_REG {
				continue
			}
			s := string(name)
			if s == "." || s == ".." {
				continue
			}
			var mode fs.FileMode
			switch typ {
			case unix.DT_DIR:
				mode = fs.ModeDir
			case unix.DT_LNK:
				mode = fs.ModeSymlink
			default: // another kind, or a file system that does not say: ask
				info, err := os.Lstat(dir + "/" + s)
				if errors.Is(err, fs.ErrNotExist) {
					continue // removed since the folder was read
				}
				if err != nil {
					return nil, err
				}
				if mode = info.Mode().Type(); mode == 0 {
					continue
				}
			}
			out = append(out, entry{name: s, typ: mode})
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	return out, nil
}
