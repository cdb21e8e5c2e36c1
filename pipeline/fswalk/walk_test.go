package fswalk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// byWalkDir is what filepath.WalkDir says of the same tree: its folders
// and symlinks, in its order.
func byWalkDir(t testing.TB, root string) (folders, links []string) {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			links = append(links, p)
		case d.IsDir():
			folders = append(folders, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return folders, links
}

func walked(t testing.TB, root string) (folders, links []string) {
	err := Walk(root, func(p string) error { folders = append(folders, p); return nil },
		func(p string) error { links = append(links, p); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return folders, links
}

func write(t testing.TB, root, rel, text string) {
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWalkAsWalkDir: Walk names the folders and symlinks filepath.WalkDir
// names, in its order, for a tree of nested and empty folders, links to
// files, folders, nowhere and outside, odd names, and a folder of 3,000
// entries (more than one read of its entries); a root that is a link is
// given to link alone, a plain file to neither.
func TestWalkAsWalkDir(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a/b/c.txt", "c")
	write(t, root, "z.txt", "z")
	write(t, root, "B/é ü\tname/x", "x")
	for i := 0; i < 3000; i++ {
		write(t, root, fmt.Sprintf("many/entry-with-a-longish-name-%04d", i), "")
	}
	for _, d := range []string{"empty/too", "many/sub", "a/b/c"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"l-file": "z.txt", "a/l-dir": "b", "many/l-none": "nowhere", "B/l-out": "/etc"} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	wantF, wantL := byWalkDir(t, root)
	gotF, gotL := walked(t, root)
	if !slices.Equal(gotF, wantF) || !slices.Equal(gotL, wantL) {
		t.Errorf("folders %q links %q\nwant %q %q", gotF, gotL, wantF, wantL)
	}
	if f, l := walked(t, filepath.Join(root, "a", "l-dir")); len(f) != 0 || len(l) != 1 {
		t.Errorf("a root that is a link: folders %q links %q", f, l)
	}
	if f, l := walked(t, filepath.Join(root, "z.txt")); len(f)+len(l) != 0 {
		t.Errorf("a root that is a file: folders %q links %q", f, l)
	}
	stop := errors.New("stop")
	n := 0
	err := Walk(root, nil, func(string) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("a link func's error: %v after %d links", err, n)
	}
	if err := Walk(filepath.Join(root, "missing"), nil, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: %v", err)
	}
}

// TestWalkAllOthersAndSkips: WalkAll tells Other of a fifo with its type
// (a plain file to no one), and a folder whose Folder func says SkipDir is
// not listed, the walk going on past it.
func TestWalkAllOthersAndSkips(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a/plain", "x")
	write(t, root, "skip/deep/f", "x")
	write(t, root, "z/f", "x")
	if err := syscall.Mkfifo(filepath.Join(root, "a", "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	var seen []string
	err := WalkAll(root, Funcs{
		Folder: func(p string) error {
			seen = append(seen, "folder "+p[len(root):])
			if filepath.Base(p) == "skip" {
				return SkipDir
			}
			return nil
		},
		Other: func(p string, typ fs.FileMode) error {
			seen = append(seen, fmt.Sprintf("other %s %v", p[len(root):], typ == fs.ModeNamedPipe))
			return nil
		},
	})
	want := []string{"folder ", "folder /a", "other /a/pipe true", "folder /skip", "folder /z"}
	if err != nil || !slices.Equal(seen, want) {
		t.Errorf("walk %q (%v), want %q", seen, err, want)
	}
}

// BenchmarkWalk20000 walks a 20,000-file tree of 200 folders for its
// folders and links, against filepath.WalkDir of the same tree asked the
// same (ratio: Walk's time over WalkDir's, min/median/max).
func BenchmarkWalk20000(b *testing.B) {
	root := b.TempDir()
	for i := 0; i < 20000; i++ {
		write(b, root, fmt.Sprintf("d%03d/f%03d", i/100, i%100), "")
	}
	var ratios []float64
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		f, _ := walked(b, root)
		fast := time.Since(t0)
		t0 = time.Now()
		g, _ := byWalkDir(b, root)
		slow := time.Since(t0)
		if len(f) != 201 || len(g) != 201 {
			b.Fatalf("%d and %d folders", len(f), len(g))
		}
		ratios = append(ratios, fast.Seconds()/slow.Seconds())
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "ratio-median")
	b.Logf("ratio (Walk / filepath.WalkDir) min/median/max %.3f/%.3f/%.3f", ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1])
}
