package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// FileStat is what a file's stat says that an edit of its bytes changes:
// writing a file changes its modification and change times, setting the
// modification time back changes the change time, replacing it changes
// its inode. Times are in nanoseconds.
type FileStat struct {
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	Mode  uint32 `json:"mode"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
}

// KnownFile is a file's digest as hashed while its stat was Stat: trusted
// for the file while a stat of it says exactly that.
type KnownFile struct {
	Stat   FileStat      `json:"stat"`
	Digest digest.Digest `json:"digest"`
}

// sameBytes says whether b, the stat of a file after a hard link to it was
// made, still describes the bytes a stat a said before: making a link
// changes the inode's change time, nothing else an edit changes.
func sameBytes(a, b FileStat) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Size == b.Size && a.Mode == b.Mode && a.Mtime == b.Mtime
}

// LinkTreeKnown is LinkTree given known, what a previous placement of the
// snapshot src recorded of its files by path (nil: nothing). A file whose
// stat, taken just before it is linked, is exactly the one known, with the
// plan's digest, is not hashed again: its bytes are the ones hashed when
// that stat was recorded. Every other file is hashed through its link. It
// returns what is known of src's files once linked (their stats after the
// link, which changed their change time), for the next placement.
func LinkTreeKnown(src, dst string, want plan.Tree, known map[string]KnownFile) (map[string]KnownFile, error) {
	var mu sync.Mutex
	now := make(map[string]KnownFile, len(want.Files))
	err := linkTree(src, dst, want, func(rel, host, out string) (bool, error) {
		e := want.Files[rel]
		before, err := os.Lstat(host)
		if err != nil {
			return false, err
		}
		pre, stated := StatOf(before)
		k, ok := known[rel]
		trusted := stated && ok && k.Stat == pre && k.Digest == e.Digest
		if err := os.Link(host, out); err != nil {
			return false, err
		}
		after, err := os.Lstat(host)
		if err != nil {
			return false, err
		}
		post, _ := StatOf(after)
		if !trusted || !sameBytes(pre, post) {
			got, err := pipeline.FileDigest(out)
			if err != nil {
				return true, err
			}
			if got != e.Digest {
				return true, fmt.Errorf("digest %s, the plan says %s", got, e.Digest)
			}
		}
		if stated {
			mu.Lock()
			now[rel] = KnownFile{Stat: post, Digest: e.Digest}
			mu.Unlock()
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return now, nil
}

// linkTree places the snapshot src at dst: folders and symlinks checked
// and made in path order, then each regular file, hashWorkers at once,
// handed to link (its path in the tree, in src and at dst), which links
// and verifies it (linked true once the link is made); where a link is
// refused (another file system), the file is copied and hashed while
// copied instead.
func linkTree(src, dst string, want plan.Tree, link func(rel, host, out string) (linked bool, err error)) error {
	files, err := walkLive(src)
	if err != nil {
		return err
	}
	name := func(f liveEntry) string { return filepath.Join(src, filepath.FromSlash(f.rel)) }
	made := map[string]bool{dst: true} // folders made: one MkdirAll per folder, not per file
	regular, err := matchTree(files, want, name, "snapshot", func(f liveEntry, target string) error {
		out := filepath.Join(dst, filepath.FromSlash(f.rel))
		if d := filepath.Dir(out); !made[d] {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			made[d] = true
		}
		if target != "" {
			return os.Symlink(target, out)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return forEachFile(len(regular), func(i int) error {
		f := regular[i]
		e := want.Files[f.rel]
		out := filepath.Join(dst, filepath.FromSlash(f.rel))
		if f.info.Mode().Perm()&0o222 != 0 {
			return fmt.Errorf("%s: writable, a snapshot's files are read-only", name(f))
		}
		linked, err := link(f.rel, f.host, out)
		if !linked && (errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EMLINK)) {
			got, err := copyHashed(f.host, out, e.Mode == "exec")
			if err != nil {
				return err
			}
			if got != e.Digest {
				return fmt.Errorf("%s: digest %s, the plan says %s", name(f), got, e.Digest)
			}
			return nil
		}
		if err != nil && linked {
			return fmt.Errorf("%s: %w", name(f), err)
		}
		return err
	})
}
