package kube

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/skillgate/skillgate/runner/backend"
	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/gateway/tunnel"
	"github.com/skillgate/skillgate/runner/internal/bounded"
)

// tree is a folder of skillgate's machine whose content a Pod's folder of
// the same path gets through the seed stream.
type tree struct {
	host string // on skillgate's machine
	path string // in the Pod
}

// given are the folders of skillgate's machine a Pod is given: the Pod's
// volumes for them when the cluster mounts them from the node, or else
// read-only folders of the Pod and the trees that fill them.
type given struct {
	vols    []corev1.Volume
	mounts  []corev1.VolumeMount
	folders []folder
	trees   []tree
}

// hostFolders gives a Pod the folders binds name ("hostpath:containerpath",
// read-only): by hostPath where the cluster's node is skillgate's machine
// (Config.HostPath); otherwise their content is streamed into the Pod, so
// that it may run on any node.
func (c *Cluster) hostFolders(binds []string, have []folder) (given, error) {
	if c.hostPath {
		vols, mounts, err := hostPathVolumes(binds, 0)
		return given{vols: vols, mounts: mounts}, err
	}
	var g given
	for _, b := range binds {
		parts := strings.Split(b, ":")
		if len(parts) < 2 || len(parts) > 3 || !path.IsAbs(parts[0]) || !path.IsAbs(parts[1]) {
			return given{}, fmt.Errorf("mount %q: want hostpath:containerpath[:ro]", b)
		}
		if len(parts) != 3 || parts[2] != "ro" {
			return given{}, fmt.Errorf("mount %q: only a read-only folder can be streamed into a pod (or run on one node with host paths)", b)
		}
		p := path.Clean(parts[1])
		if placeOf(p, append(have, g.folders...)) != placeOutside {
			return given{}, fmt.Errorf("mount %q: %s overlaps a folder of the pod (%s)", b, p, folderList(append(have, g.folders...)))
		}
		g.folders = append(g.folders, folder{path: p, readOnly: true})
		g.trees = append(g.trees, tree{host: parts[0], path: p})
	}
	return g, nil
}

// copiedTrees are the trees given (backend.ContainerSpec.Trees) as the seed
// stream copies them into the Pod: each must lie inside one of its folders
// (a cell's skills in the workspace). The copies are the agent's, their
// files read-only by mode; the folders of skillgate's machine are never
// reached from the Pod.
func copiedTrees(trees []backend.Tree, folders []folder) ([]tree, error) {
	out := make([]tree, 0, len(trees))
	for _, t := range trees {
		p := path.Clean(t.Path)
		if !path.IsAbs(t.Host) || placeOf(p, folders) != placeInside {
			return nil, fmt.Errorf("copy %s into the pod at %s: not inside one of its folders (%s)", t.Host, t.Path, folderList(folders))
		}
		out = append(out, tree{host: t.Host, path: p})
	}
	return out, nil
}

// treeEntries calls fn with a tar entry for every folder, regular file and
// symbolic link below t.host, named by its path in the Pod; anything else
// (the gateway's socket) has no content to stream and is left out.
func treeEntries(t tree, fn func(*tar.Header, io.Reader) error) error {
	return filepath.WalkDir(t.host, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(t.host, p)
		if err != nil {
			return err
		}
		name := path.Join(t.path, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return fn(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: int64(info.Mode().Perm())}, nil)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return fn(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}, nil)
		case d.Type().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return fn(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(info.Mode().Perm()), Size: info.Size()}, f)
		}
		return nil
	})
}

// relay carries a cell's connections to the gateway while ctx lasts: the
// forwarder, streamed into the Pod's gateway folder, runs in the hold
// container as the tunnel's relay, listening on the socket where the
// agent's forwarder looks for the gateway, and its standard input and
// output, an exec stream of the API, are the tunnel to socket on
// skillgate's machine. No Pod needs a network or a node in common with
// skillgate for it, and the credentials stay on skillgate's side.
//
// It returns when ctx ends (nil) or the relay does (why).
func (c *Cluster) relay(ctx context.Context, pod, dir, socket string) error {
	toPodR, toPodW := io.Pipe()
	fromPodR, fromPodW := io.Pipe()
	conn := tunnel.NewConn(fromPodR, toPodW, func() error {
		toPodW.Close()
		fromPodR.Close()
		return nil
	})
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	stderr := bounded.NewBuffer(4 << 10)
	execd := make(chan execEnd, 1)
	go func() {
		code, err := c.exec(ectx, pod, holdContainer,
			[]string{path.Join(dir, path.Base(gateway.ForwarderPath)), "-relay", "-socket", path.Join(dir, gateway.GatewaySocket)},
			streamOpts{stdin: toPodR, stdout: fromPodW, stderr: stderr})
		fromPodW.Close()
		execd <- execEnd{code, err}
	}()
	tunnel.Serve(ectx, conn, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	})
	if ctx.Err() != nil {
		return nil
	}
	cancel()
	e := <-execd
	switch {
	case e.err != nil:
		return fmt.Errorf("relay the gateway into pod %s: %w", pod, e.err)
	default:
		return fmt.Errorf("relay the gateway into pod %s: the relay ended (exit %d): %s", pod, e.code, strings.TrimSpace(string(stderr.Bytes())))
	}
}
