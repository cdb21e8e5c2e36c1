package runner

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const testLayerDockerfile = "FROM scratch\nADD " + LayerTar + " /\n"

// readContext returns the Dockerfile and the layer's headers and contents, by path.
func readContext(t *testing.T, data []byte) (string, map[string]*tar.Header, map[string]string, []string) {
	t.Helper()
	var dockerfile string
	hdrs := map[string]*tar.Header{}
	contents := map[string]string{}
	var order []string
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		switch h.Name {
		case "Dockerfile":
			dockerfile = string(b)
		case LayerTar:
			lr := tar.NewReader(bytes.NewReader(b))
			for {
				lh, err := lr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("read layer: %v", err)
				}
				c, err := io.ReadAll(lr)
				if err != nil {
					t.Fatal(err)
				}
				name := strings.TrimSuffix(lh.Name, "/")
				hdrs[name] = lh
				contents[name] = string(c)
				order = append(order, name)
			}
		default:
			t.Fatalf("unexpected context entry %q", h.Name)
		}
	}
	return dockerfile, hdrs, contents, order
}

func writeContext(t *testing.T, bc *BuildContext) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := bc.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func TestImageContextDeterministicWithOwners(t *testing.T) {
	host := t.TempDir()
	big := bytes.Repeat([]byte("0123456789"), 100_000) // not a multiple of 512
	mustDo(t, os.WriteFile(filepath.Join(host, "big.bin"), big, 0o600))
	mustDo(t, os.MkdirAll(filepath.Join(host, "tree", "sub"), 0o700))
	mustDo(t, os.WriteFile(filepath.Join(host, "tree", "run.sh"), []byte("#!/bin/sh\n"), 0o700))
	mustDo(t, os.WriteFile(filepath.Join(host, "tree", "sub", "a.txt"), []byte("a"), 0o666))
	mustDo(t, os.Symlink("sub/a.txt", filepath.Join(host, "tree", "link")))

	build := func(reverse bool) *BuildContext {
		bc := NewBuildContext(testLayerDockerfile)
		adds := []func(){
			func() { bc.AddFile("/etc/passwd", 0o644, 0, 0, []byte("root:x:0:0::/:/bin/sh\n")) },
			func() { bc.AddDir("tmp", 0o1777, 0, 0) },
			func() { bc.AddHostFile("data/big.bin", filepath.Join(host, "big.bin"), 1000, 1000) },
			func() { mustDo(t, bc.AddHostTree("workspace", filepath.Join(host, "tree"), 1000, 1001)) },
		}
		if reverse {
			for i := len(adds) - 1; i >= 0; i-- {
				adds[i]()
			}
		} else {
			for _, add := range adds {
				add()
			}
		}
		return bc
	}
	a := writeContext(t, build(false))
	b := writeContext(t, build(true))
	if !bytes.Equal(a, b) {
		t.Fatal("equal inputs added in another order gave different context bytes")
	}
	da, err := build(false).Digest()
	mustDo(t, err)
	db, err := build(true).Digest()
	mustDo(t, err)
	if da != db || da.Validate() != nil {
		t.Fatalf("digests %s and %s differ or are invalid", da, db)
	}

	dockerfile, hdrs, contents, order := readContext(t, a)
	if dockerfile != testLayerDockerfile {
		t.Errorf("Dockerfile = %q", dockerfile)
	}
	want := []string{"data/big.bin", "etc/passwd", "tmp", "workspace", "workspace/link", "workspace/run.sh", "workspace/sub", "workspace/sub/a.txt"}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("layer entries = %v, want %v", order, want)
	}
	for _, c := range []struct {
		name     string
		typ      byte
		mode     int64
		uid, gid int
	}{
		{"data/big.bin", tar.TypeReg, 0o644, 1000, 1000},
		{"etc/passwd", tar.TypeReg, 0o644, 0, 0},
		{"tmp", tar.TypeDir, 0o1777, 0, 0},
		{"workspace", tar.TypeDir, 0o755, 1000, 1001},
		{"workspace/run.sh", tar.TypeReg, 0o755, 1000, 1001},
		{"workspace/sub", tar.TypeDir, 0o755, 1000, 1001},
		{"workspace/sub/a.txt", tar.TypeReg, 0o644, 1000, 1001},
		{"workspace/link", tar.TypeSymlink, 0o777, 1000, 1001},
	} {
		h := hdrs[c.name]
		if h == nil {
			t.Errorf("%s: missing", c.name)
			continue
		}
		if h.Typeflag != c.typ || h.Mode != c.mode || h.Uid != c.uid || h.Gid != c.gid {
			t.Errorf("%s: type %c mode %o owner %d:%d, want type %c mode %o owner %d:%d",
				c.name, h.Typeflag, h.Mode, h.Uid, h.Gid, c.typ, c.mode, c.uid, c.gid)
		}
		if !h.ModTime.Equal(layerEpoch) {
			t.Errorf("%s: mtime %v, want %v", c.name, h.ModTime, layerEpoch)
		}
	}
	if hdrs["workspace/link"].Linkname != "sub/a.txt" {
		t.Errorf("link target = %q", hdrs["workspace/link"].Linkname)
	}
	if contents["data/big.bin"] != string(big) || contents["workspace/sub/a.txt"] != "a" {
		t.Error("layer file contents differ from their sources")
	}
}

func TestImageContextRefusesBadInput(t *testing.T) {
	host := t.TempDir()
	mustDo(t, os.Symlink("/etc/passwd", filepath.Join(host, "abs")))
	bc := NewBuildContext(testLayerDockerfile)
	if err := bc.AddHostTree("workspace", host, 1000, 1000); err == nil || !strings.Contains(err.Error(), "leaves the tree") {
		t.Errorf("absolute symlink: err = %v", err)
	}

	bc = NewBuildContext(testLayerDockerfile)
	bc.AddFile("../etc/x", 0o644, 0, 0, nil)
	if _, err := bc.WriteTo(io.Discard); err == nil || !strings.Contains(err.Error(), "..") {
		t.Errorf("path with ..: err = %v", err)
	}

	bc = NewBuildContext("FROM scratch\nCOPY . /\n")
	bc.AddFile("a", 0o644, 0, 0, nil)
	if _, err := bc.WriteTo(io.Discard); err == nil || !strings.Contains(err.Error(), LayerTar) {
		t.Errorf("Dockerfile without ADD of the layer: err = %v", err)
	}

	// A host file that changes between Add and the write must not give a corrupt tar.
	p := filepath.Join(host, "grows")
	mustDo(t, os.WriteFile(p, []byte("short"), 0o644))
	bc = NewBuildContext(testLayerDockerfile)
	bc.AddHostFile("grows", p, 0, 0)
	mustDo(t, os.WriteFile(p, []byte("much longer now"), 0o644))
	if _, err := bc.WriteTo(io.Discard); err == nil || !strings.Contains(err.Error(), "changed size") {
		t.Errorf("changed host file: err = %v", err)
	}
}

func TestImageContextStreamsHostFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fixture.bin")
	f, err := os.Create(p)
	mustDo(t, err)
	mustDo(t, f.Truncate(64<<20)) // sparse: 64 MiB on the tar, nothing on disk
	mustDo(t, f.Close())
	bc := NewBuildContext(testLayerDockerfile)
	bc.AddHostFile("workspace/fixture.bin", p, 1000, 1000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n, err := bc.WriteTo(io.Discard)
	runtime.ReadMemStats(&after)
	mustDo(t, err)
	if n < 64<<20 {
		t.Fatalf("context is %d bytes", n)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Errorf("writing a 64 MiB host file allocated %d bytes", grew)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
