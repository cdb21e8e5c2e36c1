package plan

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/opencontainers/go-digest"
)

// writeTree writes a folder with the kinds of entry a tree holds: plain
// and executable files, a symlink, folders nested and empty, and names
// whose sort by path differs from the walk's order by folder ("a.b" sorts
// before "a/b.txt", "a" before "a-z").
func writeTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p, body := range map[string]string{
		"a.b":         "dot\n",
		"a/b.txt":     "alpha\n",
		"a/c/d.txt":   "deep\n",
		"a-z":         "dash\n",
		"b/run.sh":    "#!/bin/sh\necho hi\n",
		"z/empty.txt": "",
	} {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "b", "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../a/b.txt", filepath.Join(dir, "b", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "e", "f", "g"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHashTreeDigest pins the tree digest of writeTree's folder: the
// digest names trees in stores and caches, so it never changes.
func TestHashTreeDigest(t *testing.T) {
	tree, err := HashTree(writeTree(t))
	if err != nil {
		t.Fatal(err)
	}
	const want = "sha256:c9c24d6aa874af7449830a18274492bc596add4b47fd3a8163830f150c0ac597"
	if tree.Digest != want {
		t.Errorf("tree digest %s, want %s", tree.Digest, want)
	}
	// One line a file, path NUL mode NUL digest, sorted by path bytes.
	var lines string
	for _, p := range []string{"a-z", "a.b", "a/b.txt", "a/c/d.txt", "b/link", "b/run.sh", "z/empty.txt"} {
		e := tree.Files[p]
		lines += p + "\x00" + e.Mode + "\x00" + string(e.Digest) + "\n"
	}
	if got := digest.FromString(lines); got != tree.Digest {
		t.Errorf("tree digest %s, the digest of its lines %s", tree.Digest, got)
	}
	if tree.ContentDigest() != tree.Digest {
		t.Errorf("content digest %s, tree digest %s", tree.ContentDigest(), tree.Digest)
	}
	if len(tree.Files) != 7 || tree.Bytes != 4+6+5+5+18+0+10 {
		t.Errorf("%d files, %d bytes: %v", len(tree.Files), tree.Bytes, tree.Files)
	}
	if e := tree.Files["b/run.sh"]; e.Mode != "exec" || e.Digest != digest.FromString("#!/bin/sh\necho hi\n") {
		t.Errorf("b/run.sh: %+v", e)
	}
	if e := tree.Files["b/link"]; e.Mode != "symlink" || e.Digest != digest.FromString("../a/b.txt") || e.Size != 10 {
		t.Errorf("b/link: %+v", e)
	}
}

// TestHashTreeFifo: a fifo in a tree is an error naming it.
func TestHashTreeFifo(t *testing.T) {
	dir := writeTree(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "a", "pipe"), 0o644); err != nil {
		t.Skip("no fifo here:", err)
	}
	_, err := HashTree(dir)
	if err == nil || err.Error() != "hash tree "+dir+": a/pipe is not a regular file, folder or symlink" {
		t.Errorf("error %v", err)
	}
}
