//go:build linux

package cache

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"

	"golang.org/x/sys/unix"
)

// localFS are the file systems (statfs magic) whose every change made
// through them inotify reports.
var localFS = map[int64]bool{
	unix.EXT4_SUPER_MAGIC:  true, // ext2, ext3, ext4
	unix.XFS_SUPER_MAGIC:   true,
	unix.BTRFS_SUPER_MAGIC: true,
	unix.TMPFS_MAGIC:       true,
	unix.F2FS_SUPER_MAGIC:  true,
}

const (
	changes  = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_DONT_FOLLOW
	dirMask  = changes | unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ONLYDIR
	fileMask = changes
)

// folderWatch is an inotify instance watching one live folder since just
// before a walk that gave tree.
type folderWatch struct {
	fd       int
	dev, ino uint64
	tree     plan.Tree

	mu      sync.Mutex
	watches int
	failed  bool
	linked  map[string]store.FileStat // files of two names, by path: their walk's stat
}

// startWatch makes the watch of abs, whose walk then has it watch each
// folder before listing it (folder); nil when abs cannot be watched.
func startWatch(abs string) *folderWatch {
	var root unix.Stat_t
	if err := unix.Lstat(abs, &root); err != nil || root.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(abs, &fs); err != nil || !localFS[int64(fs.Type)] {
		return nil
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	return &folderWatch{fd: fd, dev: uint64(root.Dev), ino: root.Ino, linked: map[string]store.FileStat{}}
}

// folder watches dir, which the walk is about to list: a folder made after
// its parent was listed is reported by the parent. A folder of another file
// system, or one watch more than allowed, fails the watch (settle).
func (w *folderWatch) folder(dir string) {
	var st unix.Stat_t
	other := unix.Lstat(dir, &st) != nil || uint64(st.Dev) != w.dev
	w.mu.Lock()
	defer w.mu.Unlock()
	if other {
		w.failed = true
		return
	}
	w.add(dir, dirMask)
}

// seen hears of each regular file the walk stat'ed: one with another name
// (outside the folder, perhaps) is watched itself, as a write through that
// name is reported to its inode, not to this folder.
func (w *folderWatch) seen(p string, info os.FileInfo) {
	sys, ok := info.Sys().(*syscall.Stat_t)
	if !ok || sys.Nlink < 2 {
		return
	}
	st, _ := store.StatOf(info)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.add(p, fileMask) {
		w.linked[p] = st
	}
}

// add watches p for the events of mask, counted against the watches
// allowed; once one fails, so does the watch, and nothing more is added.
// The caller holds mu.
func (w *folderWatch) add(p string, mask uint32) bool {
	if w.failed {
		return false
	}
	if w.watches++; w.watches > maxWatches || w.watches > watchBudget() {
		w.failed = true
		return false
	}
	if _, err := unix.InotifyAddWatch(w.fd, p, mask); err != nil {
		w.failed = true
		return false
	}
	return true
}

// settle says whether the watch covers the walk: every file of two names
// watched, and its stat still the walk's (a change between its stat and
// its watch would not have been reported).
func (w *folderWatch) settle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed {
		return false
	}
	for p, was := range w.linked {
		info, err := os.Lstat(p)
		if err != nil {
			return false
		}
		if now, ok := store.StatOf(info); !ok || now != was {
			return false
		}
	}
	w.linked = nil
	return true
}

// unchanged says whether nothing was reported since the watch began and
// the folder's path still names the folder watched.
func (w *folderWatch) unchanged() bool {
	var buf [4096]byte
	n, err := unix.Read(w.fd, buf[:])
	return n <= 0 && errors.Is(err, unix.EAGAIN)
}

// watchBudget is how many inotify watches the process may hold for live
// folders: a quarter of the user's limit, which other programs share.
var watchBudget = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return 2048
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 4 {
		return 0
	}
	return n / 4
})

func (w *folderWatch) size() int { return w.watches }

// sameRoot says whether abs is still the folder watched.
func (w *folderWatch) sameRoot(abs string) bool {
	var st unix.Stat_t
	return unix.Lstat(abs, &st) == nil && uint64(st.Dev) == w.dev && st.Ino == w.ino
}

func (w *folderWatch) close() { unix.Close(w.fd) }
