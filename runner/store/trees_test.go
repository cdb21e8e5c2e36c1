package store_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// TestVerifyTree: a pinned snapshot given to cells as it is must hold
// exactly the plan's tree; each way it can differ is refused, naming the
// file on this machine.
func TestVerifyTree(t *testing.T) {
	src := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "references"), 0o755))
	must(os.WriteFile(filepath.Join(src, "SKILL.md"), []byte("---\nname: s\n---\n"), 0o644))
	must(os.WriteFile(filepath.Join(src, "references", "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(os.Symlink("references/run.sh", filepath.Join(src, "link")))
	want, err := plan.HashTree(src)
	must(err)
	st, err := store.OpenStore(t.TempDir())
	must(err)
	snap, err := st.PinTree("skill s", src, want)
	must(err)
	if err := store.VerifyTree(snap, want); err != nil {
		t.Fatalf("the pinned snapshot: %v", err)
	}

	// A plan whose link leaves the tree (no suite compiles to one).
	leaving := plan.Tree{Files: map[string]plan.TreeEntry{}}
	for p, e := range want.Files {
		leaving.Files[p] = e
	}
	leaving.Files["link"] = plan.TreeEntry{Mode: "symlink", Digest: digest.FromString("../../etc/passwd")}
	for _, tc := range []struct {
		name   string
		change func(dir string) error
		want   string
		tree   *plan.Tree
	}{
		{"bytes", func(dir string) error {
			p := filepath.Join(dir, "SKILL.md")
			os.Chmod(p, 0o644)
			return os.WriteFile(p, []byte("---\nname: x\n---\n"), 0o644)
		}, "SKILL.md: digest sha256:", nil},
		{"added", func(dir string) error { return os.WriteFile(filepath.Join(dir, "references", "more.md"), nil, 0o644) }, "references/more.md: not in the plan", nil},
		{"missing", func(dir string) error { return os.Remove(filepath.Join(dir, "references", "run.sh")) }, "references/run.sh: in the plan, missing from the snapshot", nil},
		{"mode", func(dir string) error { return os.Chmod(filepath.Join(dir, "references", "run.sh"), 0o444) }, "references/run.sh: a regular file, the plan says an executable file", nil},
		{"link", func(dir string) error {
			os.Remove(filepath.Join(dir, "link"))
			return os.Symlink("SKILL.md", filepath.Join(dir, "link"))
		}, "link: symlink to SKILL.md (digest", nil},
		{"leaves", func(dir string) error {
			os.Remove(filepath.Join(dir, "link"))
			return os.Symlink("../../etc/passwd", filepath.Join(dir, "link"))
		}, "link: symlink to ../../etc/passwd leaves the tree", &leaving},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			must(os.CopyFS(dir, os.DirFS(snap)))
			must(tc.change(dir))
			tree := want
			if tc.tree != nil {
				tree = *tc.tree
			}
			if err := store.VerifyTree(dir, tree); err == nil || !strings.Contains(err.Error(), "verify "+dir+"/"+tc.want) {
				t.Errorf("VerifyTree: %v, want %q", err, "verify "+dir+"/"+tc.want)
			}
		})
	}
}
