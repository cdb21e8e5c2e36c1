package store

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

// treeHex names a tree snapshot in the tests: a key of 64 hex digits.
var treeHex = strings.Repeat("ef", 32)

// TestExportUnpack: a run folder packed and unpacked elsewhere holds the
// same files and links, without the lock or what was being written; the
// pack's digest depends on the files alone, and a pack altered on its way
// (a byte of a file, a file added, a link out of the folder) is refused.
func TestExportUnpack(t *testing.T) {
	out := t.TempDir()
	files := map[string]string{
		FilePlan:                             `{"format":1}`,
		"store/rollouts/ab/rollout.json":     `{"status":"completed"}`,
		"store/exchanges/bodies/cd":          "event: message_start\n",
		"store/trees/" + treeHex + "/run.sh": "#!/bin/sh\n",
		"report.md":                          "# report\n",
		".lock":                              "",
		"store/tmp/partial":                  "half",
	}
	for name, data := range files {
		p := filepath.Join(out, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(out, "store/trees/"+treeHex+"/run.sh"), 0o555)
	os.Symlink("run.sh", filepath.Join(out, "store/trees/"+treeHex+"/link"))

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
	os.Remove(filepath.Join(again, "store/trees/"+treeHex+"/link"))
	os.Symlink("run.sh", filepath.Join(again, "store/trees/"+treeHex+"/link"))
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
	if fi, err := os.Stat(filepath.Join(dst, "store/trees/"+treeHex+"/run.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("run.sh lost its mode: %v %v", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "store/trees/"+treeHex+"/link")); err != nil || l != "run.sh" {
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
		for first := true; ; first = false {
			h, err := tr.Next()
			if err != nil {
				break
			}
			data, _ := io.ReadAll(tr)
			h, data = edit(h, data)
			h.Size = int64(len(data))
			tw.WriteHeader(h)
			tw.Write(data)
			if first {
				for _, h := range extra {
					tw.WriteHeader(h)
				}
			}
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
			&tar.Header{Name: "../outside", Typeflag: tar.TypeReg, Mode: 0o644}), `../outside is not in the manifest`},
		"the manifest last": {repack(func(h *tar.Header, d []byte) (*tar.Header, []byte) {
			if h.Name == FileManifest {
				h.Name = "report.txt"
			}
			return h, d
		}), "not its manifest"},
	} {
		if _, err := Unpack(bytes.NewReader(tc.pack), filepath.Join(t.TempDir(), "run")); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

// packEntry is one entry of a crafted pack: its tar header and bytes.
type packEntry struct {
	h    tar.Header
	data []byte
}

// craftPack writes a pack whose manifest, listing files, is consistent
// with itself (its digest over its files), whatever the entries after it:
// what a hostile colleague makes by hand.
func craftPack(t *testing.T, files []PackFile, entries ...packEntry) []byte {
	t.Helper()
	m := Manifest{Format: PackFormat, Files: files}
	b, _ := json.Marshal(m.Files)
	m.Digest = digest.FromBytes(b)
	mb, _ := json.Marshal(m)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	all := append([]packEntry{{tar.Header{Name: FileManifest, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(mb))}, mb}}, entries...)
	for _, e := range all {
		if err := tw.WriteHeader(&e.h); err != nil {
			t.Fatal(err)
		}
		if len(e.data) > 0 {
			if _, err := tw.Write(e.data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestUnpackHostile: packs made by hand, their manifests consistent, are
// refused before anything is left in the target: a link out of the run
// folder (at a record, at store/grades, inside a tree but leading out of
// it), a hard link, a bomb whose sizes lie (a 64 MiB entry the manifest
// says is 9 bytes, and a manifest claiming more than the disk holds), and
// an entry the manifest does not list, whose bytes are never written.
func TestUnpackHostile(t *testing.T) {
	plan := []byte(`{"format":1}`)
	planFile := PackFile{Path: FilePlan, Digest: digest.FromBytes(plan), Bytes: int64(len(plan))}
	planEntry := packEntry{tar.Header{Name: FilePlan, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(plan))}, plan}
	link := func(name, to string) (PackFile, packEntry) {
		return PackFile{Path: name, Link: to}, packEntry{h: tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: to}}
	}
	stdoutLink, stdoutEntry := link("store/rollouts/"+treeHex+"/stdout.txt", "/etc/passwd")
	gradesLink, gradesEntry := link("store/grades", "/tmp")
	treeOut, treeOutEntry := link("store/trees/"+treeHex+"/a/up", "../../../../etc")
	treeRoot, treeRootEntry := link("store/trees/"+treeHex+"/a/root", "..")
	bomb := bytes.Repeat([]byte{0}, 64<<20)
	small := []byte("# report\n")
	for name, tc := range map[string]struct {
		pack []byte
		want string
	}{
		"a link to a host file":   {craftPack(t, []PackFile{planFile, stdoutLink}, planEntry, stdoutEntry), "a run folder holds links only inside its tree snapshots"},
		"a link at store/grades":  {craftPack(t, []PackFile{planFile, gradesLink}, planEntry, gradesEntry), "store/grades is a link"},
		"a tree link out":         {craftPack(t, []PackFile{planFile, treeOut}, planEntry, treeOutEntry), "out of its tree"},
		"a tree link to its root": {craftPack(t, []PackFile{planFile, treeRoot}, planEntry, treeRootEntry), "out of its tree"},
		"a hard link": {craftPack(t, []PackFile{planFile, {Path: "report.md", Digest: digest.FromBytes(plan), Bytes: int64(len(plan))}}, planEntry,
			packEntry{h: tar.Header{Name: "report.md", Typeflag: tar.TypeLink, Linkname: FilePlan}}), "not a hard link"},
		"a bomb": {craftPack(t, []PackFile{planFile, {Path: "report.md", Digest: digest.FromBytes(small), Bytes: int64(len(small))}}, planEntry,
			packEntry{tar.Header{Name: "report.md", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(bomb))}, bomb}), "67108864 bytes in the pack, 9 in the manifest"},
		"sizes beyond the disk": {craftPack(t, []PackFile{planFile, {Path: "report.md", Digest: digest.FromBytes(small), Bytes: 1 << 60}}, planEntry), "bytes free"},
		"an unlisted entry": {craftPack(t, []PackFile{planFile}, packEntry{tar.Header{Name: "store/grades/x.json", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(bomb))}, bomb}, planEntry),
			"store/grades/x.json is not in the manifest"},
	} {
		pack := tc.pack
		parent := t.TempDir()
		dst := filepath.Join(parent, "run")
		if _, err := Unpack(bytes.NewReader(pack), dst); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
		if left, _ := os.ReadDir(parent); len(left) != 0 {
			t.Errorf("%s: left %v behind", name, left)
		}
		if name == "a bomb" && len(pack) > 1<<20 {
			t.Errorf("the bomb is %d bytes packed, want under 1 MiB", len(pack))
		}
	}
}
