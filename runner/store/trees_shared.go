package store

import (
	"github.com/skillgate/skillgate/pipeline/plan"
)

// SharedTrees is a store of verified tree snapshots shared by the run
// folders of a machine (runner/cache). When a Store has one, PinTree asks
// it for a tree before copying the live folder: the shared store fills
// the run folder's snapshot by hard links (a copy across file systems),
// every file verified against the plan's tree as it is placed, so the run
// folder stays self-contained (export, merge, report and gate read it
// alone) and pays for a large fixture once per machine, not per folder.
type SharedTrees interface {
	// PlaceTree fills dst, an empty folder, with the tree the plan knows
	// as want, each file verified against it, from the shared store's
	// snapshot, which it first makes from the live folder src when it
	// lacks one or holds one that fails verification. what names the
	// tree in errors. It returns what it knows of dst's files once
	// placed (their stats as placed, with their digests), nil when
	// nothing.
	PlaceTree(what, src string, want plan.Tree, dst string) (map[string]KnownFile, error)
}

// CopyTree copies the live folder src into dst (an empty folder), hashing
// each file while it is copied, and fails naming the first file that
// differs from want: what PinTree does with a tree it has no snapshot of.
// Files are read-only.
func CopyTree(src, dst string, want plan.Tree) error {
	return copyVerified(src, dst, want)
}

// LinkTree places the snapshot src (a folder of read-only files that
// PinTree or CopyTree made) at dst, an empty folder, by hard links, and
// verifies every file placed, hashing the linked file itself: a damaged
// source fails naming the file, and dst is then to be discarded. Across
// file systems, where a link is refused, the file is copied and hashed
// while copied.
func LinkTree(src, dst string, want plan.Tree) error {
	_, err := LinkTreeKnown(src, dst, want, nil)
	return err
}
