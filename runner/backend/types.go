package backend

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"
)

// ContainerSpec is one hardened container: no network, no capabilities, no privilege
// escalation, limits on memory, CPU and processes, an init process, and only the
// environment given here.
type ContainerSpec struct {
	Image      string
	Cmd        []string
	Env        []string // KEY=value; nothing of skillgate's own environment enters
	User       string   // "1000:1000"
	WorkingDir string
	Labels     map[string]string

	Memory    int64 // bytes; swap is not allowed on top of it; 0 means no limit
	NanoCPUs  int64 // 1e9 is one CPU; 0 means no limit
	PidsLimit int64 // 0 means no limit
	Timeout   time.Duration

	Binds []string // "hostpath:containerpath:ro"
	// Trees are folders of skillgate's machine the container reads, and never changes,
	// inside a folder it writes to: a cell's skills in its workspace.
	Trees []Tree
	// Gateway is the gateway's folder ("hostpath:containerpath"), which
	// holds its socket and the forwarder: bound read-only here; a backend
	// whose cells run elsewhere relays it.
	Gateway string

	// OutputCap is how many bytes of stdout, and of stderr, are kept; the rest is counted
	// and discarded as it streams. It must be positive.
	OutputCap int64

	// CollectPrefix is the folder in the container whose changes are collected, such as
	// "/workspace"; changes elsewhere are ignored. Empty collects nothing.
	CollectPrefix string
	// Collect receives every entry below CollectPrefix that differs from the image, in
	// path order, once the container has exited; it reads a file's content through the
	// entry while it is visited. An error it returns fails the run, except ErrCollectCut,
	// which ends the collection as cut.
	Collect func(WorkspaceEntry) error
	// CollectLimits bound the collection; what they cut is in the outcome.
	CollectLimits CollectLimits
	// CollectAPI reads the changes through the engine's API even where the upper layer
	// could be read, so that both ways stay tested.
	CollectAPI bool

	// Files are written into the container before it starts (the prompt file, for one),
	// owned by root, so the container's user can read them but never change them.
	Files []SpecFile
	// Stdin, when set, is the container's standard input, closed after it.
	Stdin []byte
}

// Tree is a folder of skillgate's machine (Host) that a container sees at Path, read-only,
// where Path lies inside a folder the container writes to, whose other files stay its
// own: bound there by an engine of this machine; copied in by a backend whose containers
// run elsewhere. A folder at Path in the image is hidden by it.
type Tree struct {
	Host string
	Path string // absolute in the container
}

// SpecFile is one file a ContainerSpec puts into its container before the start.
type SpecFile struct {
	Path string // absolute in the container
	Mode int64
	Data []byte
}

// ContainerDurations are the phases of RunContainer, for telemetry.
type ContainerDurations struct {
	Create  time.Duration // create and attach
	Start   time.Duration
	Agent   time.Duration // from start to exit
	Collect time.Duration // inspect, diff, copy out, commit
}

// ContainerOutcome is what a finished container left: how it ended, its output and its
// file changes.
type ContainerOutcome struct {
	ExitCode  int
	TimedOut  bool
	OOMKilled bool

	Stdout, Stderr           []byte // at most OutputCap bytes each
	StdoutBytes, StderrBytes int64  // all the bytes written
	Truncated                bool   // some output was discarded

	// Collection says how the changes below CollectPrefix were read, and what was cut.
	Collection Collection

	Durations ContainerDurations
}

// SessionSpec is a hardened container that stays up while commands run in it one by one,
// such as a cell's run: checks: no network, no capabilities, no privilege escalation,
// limits, the labels to sweep it by.
type SessionSpec struct {
	Image      string
	User       string
	WorkingDir string
	Env        []string
	Binds      []string // "hostpath:containerpath:ro"
	Trees      []Tree   // read-only inside a folder the session writes to (ContainerSpec.Trees)
	Labels     map[string]string
	Memory     int64
	NanoCPUs   int64
	PidsLimit  int64
}

// ExecSpec is one command of a session.
type ExecSpec struct {
	Cmd []string
	Env []string
	// User runs the command; empty is the session's.
	User string
	// Timeout ends the command by killing the whole session; 0 means none.
	Timeout time.Duration
	// OutputCap is how many bytes of its output (stdout and stderr together) are kept.
	OutputCap int64
}

// ExecOutcome is how a command of a session ended.
type ExecOutcome struct {
	ExitCode int
	// Output is stdout and stderr as they came, at most OutputCap bytes; Bytes counts all.
	Output []byte
	Bytes  int64
	// TimedOut: the command ran past its timeout and the session was killed with it.
	TimedOut bool
}

// Types of WorkspaceEntry. They are the words the stored changes use for
// the same types, so an entry's Type is stored as it is.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// WorkspaceEntry is one path below a finished container's CollectPrefix as the container
// left it, relative to the image it started from: a file, folder, symlink or other entry
// written there, or a deletion of the image's entry.
type WorkspaceEntry struct {
	// Path is relative to the prefix, slash-separated; its elements may hold any byte but
	// NUL and '/'.
	Path string
	// Type is TypeFile, TypeDir, TypeSymlink or TypeOther; "" for a deletion.
	Type string
	// Deleted: the image's entry at Path, and everything below it, is gone.
	Deleted bool
	// Opaque: a folder that replaced the image's folder at Path; nothing of the image's
	// below it remains except what later entries name.
	Opaque bool
	// Listed: the entry is only listed, unchanged from the image (collections that list
	// the whole final workspace); it has no content to read.
	Listed bool
	Mode   fs.FileMode
	Size   int64
	Target string // a symlink's

	open func() (io.ReadCloser, error)
}

// Open returns a regular file's content. It is valid only while the entry is visited.
func (e WorkspaceEntry) Open() (io.ReadCloser, error) {
	if e.open == nil {
		return nil, fmt.Errorf("open %s: no content", e.Path)
	}
	return e.open()
}

// WithContent returns the entry with its content read from open, for a
// backend that reads a workspace another way than this package does.
func (e WorkspaceEntry) WithContent(open func() (io.ReadCloser, error)) WorkspaceEntry {
	e.open = open
	return e
}

// HasContent reports whether the entry has content to Open.
func (e WorkspaceEntry) HasContent() bool { return e.open != nil }

// CollectLimits bound what a collection reads of a container's workspace.
type CollectLimits struct {
	// Entries is the most paths visited; past it the rest is cut. 0 means no bound.
	Entries int
	// Timeout bounds the whole collection; 0 means none.
	Timeout time.Duration
}

// Collection says how a container's workspace was read.
type Collection struct {
	// Method is "upper" (the container's own overlay layer, read on the host: the cost
	// follows the changes alone) or "api" (the engine's change list and an archive of
	// the workspace, where the upper layer cannot be read here).
	Method string `json:"method"`
	// Entries counts the paths visited.
	Entries int `json:"entries"`
	// Cut says why the collection stopped before the end; empty when complete.
	Cut string `json:"cut,omitempty"`
}

// ErrCollectCut ends a collection at a limit; a CollectCut carries the reason.
var ErrCollectCut = errors.New("collection cut")

// CollectCut ends a collection at a limit, saying which: a visitor returns one to stop, and
// reading a file past the collection's deadline gives one.
type CollectCut struct{ Reason string }

func (c CollectCut) Error() string { return c.Reason }

// Is makes every CollectCut match ErrCollectCut.
func (CollectCut) Is(target error) bool { return target == ErrCollectCut }

// ImageInfo is what skillgate reads of a local image.
type ImageInfo struct {
	ID string
	// RepoDigests are the repository digests it was pulled or pushed by
	// ("registry/name@sha256:...").
	RepoDigests []string
	Labels      map[string]string
	// Layers are its layers' diff IDs, the base's first, and Size the bytes of them all:
	// an image one layer above another (a cell image on its fixture image) stores the
	// difference of their sizes.
	Layers []string
	Size   int64
}

// ImageBuild is one image of a local engine's BuildImages: its tag, its labels and its build context.
type ImageBuild struct {
	Tag     string
	Labels  map[string]string
	Context *BuildContext
}

// ErrImageMissing says a container's image is gone from the engine: removed since it was
// built or found (by skillgate gc, docker rmi, another process). Whoever built it can
// build it again.
var ErrImageMissing = errors.New("image missing")
