package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/opencontainers/go-digest"
)

func TestImageContextDeterministicWithOwners(t *testing.T) {
	host := t.TempDir()
	big := bytes.Repeat([]byte("0123456789"), 100_000) // not a multiple of 512
	mustDo(t, os.WriteFile(filepath.Join(host, "big.bin"), big, 0o600))
	mustDo(t, os.MkdirAll(filepath.Join(host, "tree", "sub"), 0o700))
	mustDo(t, os.WriteFile(filepath.Join(host, "tree", "run.sh"), []byte("#!/bin/sh\n"), 0o700))
	mustDo(t, os.WriteFile(filepath.Join(host, "tree", "sub", "a.txt"), []byte("a"), 0o666))
	mustDo(t, os.Symlink("sub/a.txt", filepath.Join(host, "tree", "link")))

	build := func(reverse bool) *docker.BuildContext {
		bc := docker.NewBuildContext(dockertest.LayerDockerfile)
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
	a := dockertest.WriteContext(t, build(false))
	b := dockertest.WriteContext(t, build(true))
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

	dockerfile, hdrs, contents, order := dockertest.ReadContext(t, a)
	if dockerfile != dockertest.LayerDockerfile {
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
		if !h.ModTime.Equal(docker.LayerEpoch) {
			t.Errorf("%s: mtime %v, want %v", c.name, h.ModTime, docker.LayerEpoch)
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
	bc := docker.NewBuildContext(dockertest.LayerDockerfile)
	if err := bc.AddHostTree("workspace", host, 1000, 1000); err == nil || !strings.Contains(err.Error(), "leaves the tree") {
		t.Errorf("absolute symlink: err = %v", err)
	}

	bc = docker.NewBuildContext(dockertest.LayerDockerfile)
	bc.AddFile("../etc/x", 0o644, 0, 0, nil)
	if _, err := bc.WriteTo(io.Discard); err == nil || !strings.Contains(err.Error(), "..") {
		t.Errorf("path with ..: err = %v", err)
	}

	bc = docker.NewBuildContext("FROM scratch\nCOPY . /\n")
	bc.AddFile("a", 0o644, 0, 0, nil)
	if _, err := bc.WriteTo(io.Discard); err == nil || !strings.Contains(err.Error(), docker.LayerTar) {
		t.Errorf("Dockerfile without ADD of the layer: err = %v", err)
	}

	// A host file that changes between Add and the write must not give a corrupt tar.
	p := filepath.Join(host, "grows")
	mustDo(t, os.WriteFile(p, []byte("short"), 0o644))
	bc = docker.NewBuildContext(dockertest.LayerDockerfile)
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
	bc := docker.NewBuildContext(dockertest.LayerDockerfile)
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

// TestLayerLoadedOnBase: a context that only adds a layer on an image, every folder of
// it in it, is that image and one layer: the base's configuration with the labels
// added, the owners and modes of the headers, and one image ID for equal content; a
// base that is gone is ErrImageMissing, and a context missing a folder is built, so the
// base's folder stays as it is.
func TestLayerLoadedOnBase(t *testing.T) {
	e := dockertest.Engine(t)
	labels, _ := dockertest.Labels(t, e)
	ctx := context.Background()
	sandbox, err := e.EnsureSandbox(ctx)
	mustDo(t, err)
	base, _, err := e.ImageInfo(ctx, sandbox)
	mustDo(t, err)
	layer := func(from string) *docker.BuildContext {
		bc := docker.NewBuildContext("FROM " + from + "\nADD " + docker.LayerTar + " /\n")
		bc.AddDir("workspace", 0o755, 1000, 1000)
		bc.AddDir("workspace/sub", 0o700, 1000, 1000)
		bc.AddFile("workspace/sub/a.txt", 0o640, 1000, 1000, []byte("a\n"))
		return bc
	}
	tag := "skillgate-test/layer:" + labels[dockertest.Label]
	id, err := e.BuildImage(ctx, tag, labels, layer(sandbox))
	mustDo(t, err)
	again, err := e.BuildImage(ctx, tag+"-again", labels, layer(sandbox))
	mustDo(t, err)
	if again != id {
		t.Errorf("equal layers on one base are images %s and %s", id, again)
	}
	info, _, err := e.ImageInfo(ctx, tag)
	mustDo(t, err)
	if len(info.Layers) != len(base.Layers)+1 || strings.Join(info.Layers[:len(base.Layers)], " ") != strings.Join(base.Layers, " ") {
		t.Errorf("layers %v, want the sandbox's %v and one more", info.Layers, base.Layers)
	}
	if info.Labels[dockertest.Label] != labels[dockertest.Label] || info.Labels[docker.LabelImage] != "sandbox" {
		t.Errorf("labels %v: want the build's and the base's", info.Labels)
	}
	out := dockertest.Run(t, e, docker.ContainerSpec{Image: tag, Cmd: []string{"sh", "-c", "id -u; pwd; stat -c '%a %u:%g %n' /workspace /workspace/sub /workspace/sub/a.txt"},
		Labels: labels, Timeout: time.Minute, OutputCap: 1 << 20})
	// The sandbox's user and working folder come from its configuration.
	want := "1000\n/workspace\n755 1000:1000 /workspace\n700 1000:1000 /workspace/sub\n640 1000:1000 /workspace/sub/a.txt\n"
	if string(out.Stdout) != want {
		t.Errorf("the loaded image holds\n%s\nwant\n%s(stderr %s)", out.Stdout, want, out.Stderr)
	}

	if _, err := e.BuildImage(ctx, tag+"-orphan", labels, layer("sha256:"+strings.Repeat("0", 64))); !errors.Is(err, docker.ErrImageMissing) {
		t.Errorf("a layer on a missing base: %v, want ErrImageMissing", err)
	}

	// Without its folder in the layer, /workspace keeps the sandbox's owner.
	bc := docker.NewBuildContext("FROM " + sandbox + "\nADD " + docker.LayerTar + " /\n")
	bc.AddFile("workspace/b.txt", 0o644, 0, 0, []byte("b\n"))
	_, err = e.BuildImage(ctx, tag+"-built", labels, bc)
	mustDo(t, err)
	out = dockertest.Run(t, e, docker.ContainerSpec{Image: tag + "-built", Cmd: []string{"stat", "-c", "%u %n", "/workspace", "/workspace/b.txt"}, Labels: labels, Timeout: time.Minute, OutputCap: 1 << 20})
	if want := "1000 /workspace\n0 /workspace/b.txt\n"; string(out.Stdout) != want {
		t.Errorf("built on the sandbox: %q, want %q", out.Stdout, want)
	}
}

// TestLayersLoadedTogether: images one layer above each other, loaded in one archive
// by BuildImages (a case's fixture image and its arms' images above it), are the
// images BuildImage makes one by one: one ID for equal content, the fixture's layer
// under every arm's, the labels of each; an entry whose bytes are not the plan's fails
// the load before any image of it is tagged, and a base that is gone is
// ErrImageMissing.
func TestLayersLoadedTogether(t *testing.T) {
	e := dockertest.Engine(t)
	labels, _ := dockertest.Labels(t, e)
	ctx := context.Background()
	sandbox, err := e.EnsureSandbox(ctx)
	mustDo(t, err)
	tag := "skillgate-test/stack:" + labels[dockertest.Label]
	with := func(key string) map[string]string {
		l := map[string]string{docker.LabelCellKey: key}
		for k, v := range labels {
			l[k] = v
		}
		return l
	}
	fixture := func(from string) *docker.BuildContext {
		bc := docker.NewBuildContext("FROM " + from + "\nADD " + docker.LayerTar + " /\n")
		bc.AddDir("workspace", 0o755, 1000, 1000)
		bc.AddFile("workspace/fixture.txt", 0o644, 1000, 1000, []byte("fixture\n"))
		return bc
	}
	arm := func(from, skill string) *docker.BuildContext {
		bc := docker.NewBuildContext("FROM " + from + "\nADD " + docker.LayerTar + " /\n")
		bc.AddDir("workspace", 0o755, 1000, 1000)
		bc.AddDir("workspace/skills", 0o755, 1000, 1000)
		bc.AddFile("workspace/skills/"+skill, 0o644, 1000, 1000, []byte(skill+"\n"))
		return bc
	}
	ids, err := e.BuildImages(ctx, []docker.ImageBuild{
		{Tag: tag + "-fixture", Labels: with("fixture"), Context: fixture(sandbox)},
		{Tag: tag + "-one", Labels: with("one"), Context: arm(tag+"-fixture", "one")},
		{Tag: tag + "-two", Labels: with("two"), Context: arm(tag+"-fixture", "two")},
	})
	mustDo(t, err)
	if len(ids) != 3 || ids[1] == ids[2] {
		t.Fatalf("ids %v: want three images", ids)
	}

	// One by one, as the runner builds an arm over a fixture image it finds.
	alone, err := e.BuildImage(ctx, tag+"-fixture-alone", with("fixture"), fixture(sandbox))
	mustDo(t, err)
	armAlone, err := e.BuildImage(ctx, tag+"-one-alone", with("one"), arm(alone, "one"))
	mustDo(t, err)
	if alone != ids[0] || armAlone != ids[1] {
		t.Errorf("loaded together %s and %s, one by one %s and %s: equal content is one image", ids[0], ids[1], alone, armAlone)
	}

	base, _, err := e.ImageInfo(ctx, sandbox)
	mustDo(t, err)
	fx, _, err := e.ImageInfo(ctx, tag+"-fixture")
	mustDo(t, err)
	for i, name := range []string{"one", "two"} {
		info, _, err := e.ImageInfo(ctx, tag+"-"+name)
		mustDo(t, err)
		if info.ID != ids[i+1] || len(info.Layers) != len(fx.Layers)+1 || strings.Join(info.Layers[:len(fx.Layers)], " ") != strings.Join(fx.Layers, " ") {
			t.Errorf("arm %s: %s, layers %v, want %s: the fixture's %v and one more", name, info.ID, info.Layers, ids[i+1], fx.Layers)
		}
		if info.Labels[docker.LabelCellKey] != name || info.Labels[dockertest.Label] != labels[dockertest.Label] || info.Labels[docker.LabelImage] != "sandbox" {
			t.Errorf("arm %s: labels %v, want its own over the fixture's and the sandbox's", name, info.Labels)
		}
		out := dockertest.Run(t, e, docker.ContainerSpec{Image: tag + "-" + name, Cmd: []string{"sh", "-c", "cat /workspace/fixture.txt; ls /workspace/skills; stat -c '%u' /workspace/skills/" + name},
			Labels: labels, Timeout: time.Minute, OutputCap: 1 << 20})
		if want := "fixture\n" + name + "\n1000\n"; string(out.Stdout) != want {
			t.Errorf("arm %s holds %q, want %q (stderr %s)", name, out.Stdout, want, out.Stderr)
		}
	}
	if len(fx.Layers) != len(base.Layers)+1 {
		t.Errorf("fixture layers %v, want the sandbox's %v and one more", fx.Layers, base.Layers)
	}

	// An arm's file that is not the plan's: the load fails, and tags nothing.
	dir := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("changed\n"), 0o644))
	bad := arm(tag+"-bad-fixture", "three")
	mustDo(t, bad.AddTree("workspace/skills/bad", dir, map[string]docker.TreeFile{"SKILL.md": {Digest: digest.FromString("planned\n"), Size: 8}}, 1000, 1000))
	fb := fixture(sandbox)
	fb.AddFile("workspace/other.txt", 0o644, 1000, 1000, []byte("other\n"))
	_, err = e.BuildImages(ctx, []docker.ImageBuild{
		{Tag: tag + "-bad-fixture", Labels: with("bad-fixture"), Context: fb},
		{Tag: tag + "-bad", Labels: with("bad"), Context: bad},
	})
	if err == nil || !strings.Contains(err.Error(), "the plan says") {
		t.Errorf("a file that is not the plan's: %v, want its digest refused", err)
	}
	for _, ref := range []string{tag + "-bad-fixture", tag + "-bad"} {
		if _, ok, err := e.ImageExists(ctx, ref); err != nil || ok {
			t.Errorf("%s exists (%v) after a load that failed", ref, err)
		}
	}

	if _, err := e.BuildImages(ctx, []docker.ImageBuild{
		{Tag: tag + "-orphan", Labels: labels, Context: fixture("sha256:" + strings.Repeat("0", 64))},
		{Tag: tag + "-orphan-arm", Labels: labels, Context: arm(tag+"-orphan", "one")},
	}); !errors.Is(err, docker.ErrImageMissing) {
		t.Errorf("layers on a missing base: %v, want ErrImageMissing", err)
	}
}
