package store

import (
	"io/fs"
	"syscall"
)

// StatOf is what info (an Lstat) says of a file that an edit of its bytes
// changes; false when the system gives no inode, device or change time.
func StatOf(info fs.FileInfo) (FileStat, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return FileStat{}, false
	}
	return FileStat{
		Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size, Mode: uint32(st.Mode),
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(),
	}, true
}
