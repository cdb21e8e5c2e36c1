package store

import (
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
// plan's digest, and whose link's stat then says the same inode and bytes,
// is not hashed again: its bytes are the ones hashed when that stat was
// recorded. Every other file is hashed through its link. Files are stated
// and linked relative to their folders, opened once, on hashWorkers
// workers. It returns what is known of src's files once linked (their
// links' stats, the link having changed their change time), for the next
// placement.
func LinkTreeKnown(src, dst string, want plan.Tree, known map[string]KnownFile) (map[string]KnownFile, error) {
	p, err := walkPlacing(src, dst, want)
	if err != nil {
		return nil, err
	}
	return p.place(known)
}
