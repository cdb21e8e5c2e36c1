package kube

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/skillgate/skillgate/runner/backend"
)

// Names of a Pod's containers.
const (
	// seedContainer unpacks the cell's content, streamed into its standard
	// input, into the Pod's folders before anything else starts.
	seedContainer = "seed"
	// agentContainer runs the cell's command.
	agentContainer = "agent"
	// holdContainer holds the workspace read-only for its collection once
	// the agent has ended.
	holdContainer = "hold"
	// sessionContainer is a check session's.
	sessionContainer = "session"
)

// seedRoot is where the seed container sees the Pod's folders.
const seedRoot = "/skillgate-seed"

// homeDir is the agent user's home in skillgate's images, when the
// environment names none.
const homeDir = "/home/agent"

// folder is one folder of a Pod that is not its image's: an emptyDir every
// container of the Pod sees at the same path (the seed container below
// seedRoot), writable by the container's user unless readOnly.
type folder struct {
	path     string
	readOnly bool // for the agent
}

// volumeName is a folder's volume.
func volumeName(i int) string { return "f" + strconv.Itoa(i) }

// writableFolders are the folders a cell's agent may write to besides
// nothing: the root is read-only, so these are the image's folders an
// agent writes to (the workspace, its home, /tmp).
func writableFolders(env []string) []folder {
	home := homeDir
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok && path.IsAbs(v) && path.Clean(v) != "/" {
			home = path.Clean(v)
		}
	}
	fs := []folder{{path: backend.Workspace}, {path: "/tmp"}}
	if home != backend.Workspace && home != "/tmp" {
		fs = append(fs, folder{path: home})
	}
	return fs
}

// hardened is a container's security context: the user given, never root,
// no privilege escalation, no capabilities, a read-only root, the
// runtime's seccomp profile.
func hardened(user string) (*corev1.SecurityContext, error) {
	u, g, hasGid := strings.Cut(user, ":")
	uid, err := strconv.ParseInt(u, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("parse user %q: a Pod needs a numeric uid[:gid]", user)
	}
	gid := uid
	if hasGid {
		if gid, err = strconv.ParseInt(g, 10, 64); err != nil {
			return nil, fmt.Errorf("parse user %q: a Pod needs a numeric uid[:gid]", user)
		}
	}
	if uid == 0 {
		return nil, fmt.Errorf("parse user %q: a Pod never runs as root", user)
	}
	f, t := false, true
	return &corev1.SecurityContext{
		RunAsUser: &uid, RunAsGroup: &gid, RunAsNonRoot: &t,
		Privileged: &f, AllowPrivilegeEscalation: &f,
		Capabilities:           &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem: &t,
		SeccompProfile:         &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}, nil
}

// limits are a container's resources: the limits given, and no request, so
// that the scheduler does not hold a node's cores for cells that mostly wait
// on a model; --jobs bounds how many run.
func limits(memory, nanoCPUs int64) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
	if memory > 0 {
		r.Limits[corev1.ResourceMemory] = *resource.NewQuantity(memory, resource.BinarySI)
		r.Requests[corev1.ResourceMemory] = *resource.NewQuantity(0, resource.BinarySI)
	}
	if nanoCPUs > 0 {
		r.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(nanoCPUs/1e6, 1), resource.DecimalSI)
		r.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(0, resource.DecimalSI)
	}
	return r
}

// podMeta is a Pod's labels and annotations: every label given whose value
// Kubernetes accepts as a label, all of them as annotations.
func podMeta(prefix string, given map[string]string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{GenerateName: prefix, Labels: map[string]string{LabelManaged: managedBy}, Annotations: map[string]string{}}
	for k, v := range given {
		m.Annotations[k] = v
		if len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(v)) == 0 {
			m.Labels[k] = v
		}
	}
	return m
}

// hostPathVolumes turns "hostpath:containerpath[:ro]" into hostPath volumes:
// on a cluster whose one node is skillgate's machine.
func hostPathVolumes(bs []string, first int) ([]corev1.Volume, []corev1.VolumeMount, error) {
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	for i, b := range bs {
		parts := strings.Split(b, ":")
		if len(parts) < 2 || len(parts) > 3 || !path.IsAbs(parts[0]) || !path.IsAbs(parts[1]) {
			return nil, nil, fmt.Errorf("mount %q: want hostpath:containerpath[:ro]", b)
		}
		dir := corev1.HostPathDirectory
		name := "h" + strconv.Itoa(first+i)
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: parts[0], Type: &dir}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: parts[1], ReadOnly: len(parts) == 3 && parts[2] == "ro"})
	}
	return vols, mounts, nil
}

// podShape is what the Pods of cells and sessions share: their folders, the
// seed container that fills them, the hardening and the Pod's settings.
type podShape struct {
	image   string
	user    string
	folders []folder
	memory  int64
	cpus    int64
	labels  map[string]string
	prefix  string
	// deadline, when set, is the Pod's activeDeadlineSeconds.
	deadline time.Duration
}

// seedScript copies what the image holds in each folder into it (an image's
// own files under the workspace or the home stay visible), then unpacks the
// cell's content from standard input.
const seedScript = `for d in "$@"; do
	if [ -d "$d" ]; then cp -R "$d"/. "` + seedRoot + `$d"/ 2>/dev/null || true; fi
done
exec tar -x -o -f - -C ` + seedRoot

// pod is the Pod of shape, with its seed container and the containers given,
// each of which gets the folders (read-only where the folder says, when ro
// is set) and the hardening.
func (s podShape) pod(containers []corev1.Container, roFor map[string]bool, extraVols []corev1.Volume) (*corev1.Pod, error) {
	sc, err := hardened(s.user)
	if err != nil {
		return nil, err
	}
	var vols []corev1.Volume
	var seedMounts []corev1.VolumeMount
	args := []string{"/bin/sh", "-c", seedScript, "sh"}
	for i, f := range s.folders {
		vols = append(vols, corev1.Volume{Name: volumeName(i), VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		seedMounts = append(seedMounts, corev1.VolumeMount{Name: volumeName(i), MountPath: seedRoot + f.path})
		args = append(args, f.path)
	}
	res := limits(s.memory, s.cpus)
	for i := range containers {
		ct := &containers[i]
		for j, f := range s.folders {
			ct.VolumeMounts = append(ct.VolumeMounts, corev1.VolumeMount{Name: volumeName(j), MountPath: f.path, ReadOnly: f.readOnly && roFor[ct.Name]})
		}
		ct.Image, ct.ImagePullPolicy, ct.SecurityContext, ct.Resources = s.image, corev1.PullIfNotPresent, sc.DeepCopy(), res
		ct.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	f, t := false, true
	p := &corev1.Pod{
		ObjectMeta: podMeta(s.prefix, s.labels),
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &f,
			EnableServiceLinks:            &f,
			TerminationGracePeriodSeconds: new(int64),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   &t,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			InitContainers: []corev1.Container{{
				Name: seedContainer, Image: s.image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: args, Stdin: true, StdinOnce: true,
				VolumeMounts: seedMounts, SecurityContext: sc.DeepCopy(), Resources: res,
			}},
			Containers: containers,
			Volumes:    append(vols, extraVols...),
		},
	}
	if s.deadline > 0 {
		secs := int64((s.deadline + time.Second - 1) / time.Second)
		p.Spec.ActiveDeadlineSeconds = &secs
	}
	return p, nil
}

// seedStream writes the tar the seed container unpacks: the entries of the
// cell image's layers, in order, the trees' and the files given, each placed in its folder, owned by
// whoever unpacks it. An entry outside every folder cannot be placed in a Pod
// whose root is read-only: it is an error. A folder's own entry and those
// above it are left out (the folders exist).
func seedStream(w io.Writer, layers []*backend.BuildContext, trees []tree, files []backend.SpecFile, folders []folder) error {
	tw := tar.NewWriter(w)
	place := func(h *tar.Header, r io.Reader) error {
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		switch where := placeOf("/"+name, folders); where {
		case placeAbove:
			return nil
		case placeOutside:
			return fmt.Errorf("place %s in the pod: not below one of its folders (%s); the pod's root is read-only", "/"+name, folderList(folders))
		}
		hdr := *h
		hdr.Name = name
		if h.Typeflag == tar.TypeDir {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(&hdr); err != nil {
			return err
		}
		if r != nil && h.Typeflag == tar.TypeReg {
			if _, err := io.CopyN(tw, r, h.Size); err != nil {
				return err
			}
		}
		return nil
	}
	for _, bc := range layers {
		if err := layerEntries(bc, place); err != nil {
			return fmt.Errorf("stream the cell's content: %w", err)
		}
	}
	for _, t := range trees {
		if err := treeEntries(t, place); err != nil {
			return fmt.Errorf("stream %s into the pod: %w", t.host, err)
		}
	}
	// Given files' folders: created readable by all, as a container's are.
	dirs := map[string]bool{}
	for _, f := range files {
		var parents []string
		for d := path.Dir(path.Clean(f.Path)); d != "/" && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
			dirs[d] = true
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if err := place(&tar.Header{Typeflag: tar.TypeDir, Name: parents[i], Mode: 0o755}, nil); err != nil {
				return err
			}
		}
		if err := place(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: f.Mode, Size: int64(len(f.Data))}, bytes.NewReader(f.Data)); err != nil {
			return err
		}
	}
	return tw.Close()
}

// Where an absolute path is relative to a Pod's folders.
const (
	placeInside = iota
	placeAbove
	placeOutside
)

func placeOf(p string, folders []folder) int {
	for _, f := range folders {
		if p == f.path || strings.HasPrefix(f.path, p+"/") || p == "/" {
			return placeAbove
		}
	}
	for _, f := range folders {
		if strings.HasPrefix(p, f.path+"/") {
			return placeInside
		}
	}
	return placeOutside
}

func folderList(folders []folder) string {
	var ps []string
	for _, f := range folders {
		ps = append(ps, f.path)
	}
	sort.Strings(ps)
	return strings.Join(ps, ", ")
}

// filesFolders are the top folders of the files given: each becomes a folder
// of the Pod that its agent reads but cannot change.
func filesFolders(files []backend.SpecFile, have []folder) []folder {
	var out []folder
	seen := map[string]bool{}
	for _, f := range files {
		p := path.Clean(f.Path)
		if placeOf(p, have) == placeInside {
			continue
		}
		top := "/" + strings.SplitN(strings.TrimPrefix(p, "/"), "/", 2)[0]
		if top != p && !seen[top] {
			seen[top] = true
			out = append(out, folder{path: top, readOnly: true})
		}
	}
	return out
}
