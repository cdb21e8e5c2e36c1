package store

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportUnpack: a run folder packed and unpacked elsewhere holds the
// same files and links, without the lock or what was being written; the
// pack's digest depends on the files alone, and a pack altered on its way
// (a byte of a file, a file added, a link out of the folder) is refused.
func TestExportUnpack(t *testing.T) {
	out := t.TempDir()
	files := map[string]string{
		FilePlan:                         `{"format":1}`,
		"store/rollouts/ab/rollout.json": `{"status":"completed"}`,
		"store/exchanges/bodies/cd":      "event: message_start\n",
		"store/trees/ef/run.sh":          "#!/bin/sh\n",
		"report.md":                      "# report\n",
		".lock":                          "",
		"store/tmp/partial":              "half",
	}
	for name, data := range files {
		p := filepath.Join(out, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(out, "store/trees/ef/run.sh"), 0o555)
	os.Symlink("run.sh", filepath.Join(out, "store/trees/ef/link"))

	var pack bytes.Buffer
	m, err := Export(out, &pack)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 6 || m.Plan == "" || m.Digest == "" {
		t.Fatalf("manifest %+v", m)
	}
	// The same folder packs to the same digest, later and elsewhere.
	again := t.TempDir()
	if err := os.CopyFS(again, os.DirFS(out)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(again, "store/trees/ef/link"))
	os.Symlink("run.sh", filepath.Join(again, "store/trees/ef/link"))
	if m2, err := Export(again, io.Discard); err != nil || m2.Digest != m.Digest {
		t.Errorf("second pack %v %v, first %s", m2.Digest, err, m.Digest)
	}

	dst := filepath.Join(t.TempDir(), "run")
	got, err := Unpack(bytes.NewReader(pack.Bytes()), dst)
	if err != nil || got.Digest != m.Digest {
		t.Fatalf("unpack: %v %v", got, err)
	}
	for name, data := range files {
		b, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(name)))
		skipped := name == ".lock" || strings.HasPrefix(name, "store/tmp/")
		if skipped != (err != nil) || (!skipped && string(b) != data) {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dst, "store/trees/ef/run.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("run.sh lost its mode: %v %v", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "store/trees/ef/link")); err != nil || l != "run.sh" {
		t.Errorf("link %q %v", l, err)
	}
	if _, err := Unpack(bytes.NewReader(pack.Bytes()), dst); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("import over a folder: %v", err)
	}

	// Altered packs.
	repack := func(edit func(h *tar.Header, data []byte) (*tar.Header, []byte), extra ...*tar.Header) []byte {
		zr, _ := gzip.NewReader(bytes.NewReader(pack.Bytes()))
		tr := tar.NewReader(zr)
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		for _, h := range extra {
			tw.WriteHeader(h)
		}
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			data, _ := io.ReadAll(tr)
			h, data = edit(h, data)
			h.Size = int64(len(data))
			tw.WriteHeader(h)
			tw.Write(data)
		}
		tw.Close()
		zw.Close()
		return buf.Bytes()
	}
	for name, tc := range map[string]struct {
		pack []byte
		want string
	}{
		"a byte": {repack(func(h *tar.Header, d []byte) (*tar.Header, []byte) {
			if h.Name == "report.md" {
				d = []byte("# rep0rt\n")
			}
			return h, d
		}), "report.md does not match the manifest"},
		"a file added": {repack(func(h *tar.Header, d []byte) (*tar.Header, []byte) { return h, d },
			&tar.Header{Name: "store/grades/x.json", Typeflag: tar.TypeReg, Mode: 0o644}), "store/grades/x.json is not in the manifest"},
		"an escape": {repack(func(h *tar.Header, d []byte) (*tar.Header, []byte) { return h, d },
			&tar.Header{Name: "../outside", Typeflag: tar.TypeReg, Mode: 0o644}), `"../outside" is not a path inside a run folder`},
		"a file through a link": {repack(func(h *tar.Header, d []byte) (*tar.Header, []byte) { return h, d },
			&tar.Header{Name: "store/up", Typeflag: tar.TypeSymlink, Linkname: "/etc"}, &tar.Header{Name: "store/up/x", Typeflag: tar.TypeSymlink, Linkname: "y"}), "store/up/x lies under the link store/up"},
	} {
		if _, err := Unpack(bytes.NewReader(tc.pack), filepath.Join(t.TempDir(), "run")); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
