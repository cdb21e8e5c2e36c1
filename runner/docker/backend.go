package docker

import (
	"github.com/distribution/reference"

	"github.com/skillgate/skillgate/runner/backend"
)

// The neutral types and names of the backend seam (runner/backend), under
// the names this package has always given them.
type (
	BuildContext       = backend.BuildContext
	TreeFile           = backend.TreeFile
	ContainerSpec      = backend.ContainerSpec
	ContainerOutcome   = backend.ContainerOutcome
	ContainerDurations = backend.ContainerDurations
	Tree               = backend.Tree
	SpecFile           = backend.SpecFile
	SessionSpec        = backend.SessionSpec
	ExecSpec           = backend.ExecSpec
	ExecOutcome        = backend.ExecOutcome
	WorkspaceEntry     = backend.WorkspaceEntry
	CollectLimits      = backend.CollectLimits
	Collection         = backend.Collection
	CollectCut         = backend.CollectCut
	ImageInfo          = backend.ImageInfo
	PushedImage        = backend.PushedImage
	ImageBuild         = backend.ImageBuild
)

// Names of the seam's entries, labels and images.
const (
	LayerTar            = backend.LayerTar
	TypeFile            = backend.TypeFile
	TypeDir             = backend.TypeDir
	TypeSymlink         = backend.TypeSymlink
	TypeOther           = backend.TypeOther
	LabelImage          = backend.LabelImage
	LabelRun            = backend.LabelRun
	LabelOut            = backend.LabelOut
	LabelCell           = backend.LabelCell
	LabelPlan           = backend.LabelPlan
	LabelSuite          = backend.LabelSuite
	LabelKind           = backend.LabelKind
	LabelCellKey        = backend.LabelCellKey
	LabelAgent          = backend.LabelAgent
	LabelAgentVersion   = backend.LabelAgentVersion
	LabelEnvKey         = backend.LabelEnvKey
	LabelDebianRelease  = backend.LabelDebianRelease
	LabelDebianPackages = backend.LabelDebianPackages
	LabelDebianMirror   = backend.LabelDebianMirror
	Workspace           = backend.Workspace
	CellImageRepo       = backend.CellImageRepo
	SandboxImage        = backend.SandboxImage
)

// ErrImageMissing says an image is gone from the engine (backend.ErrImageMissing).
var ErrImageMissing = backend.ErrImageMissing

var (
	layerEpoch    = backend.LayerEpoch
	errCollectCut = backend.ErrCollectCut
)

// The sandbox's userland (backend.BusyboxPath, SandboxApplets, CheckStatic, AddUserland).
const BusyboxPath = backend.BusyboxPath

// SandboxApplets are the busybox applets linked into /bin (backend.SandboxApplets).
var SandboxApplets = backend.SandboxApplets

// CheckStatic fails unless the file is a static ELF executable (backend.CheckStatic).
func CheckStatic(p string) error { return backend.CheckStatic(p) }

// AddUserland gives an image built FROM scratch its users (backend.AddUserland).
func AddUserland(bc *BuildContext, shell string) { backend.AddUserland(bc, shell) }

// NewBuildContext starts a build context (backend.NewBuildContext).
func NewBuildContext(dockerfile string) *BuildContext { return backend.NewBuildContext(dockerfile) }

// NewTreeContext is a build context of a tree's files (backend.NewTreeContext).
func NewTreeContext(dir string, files map[string]TreeFile) (*BuildContext, error) {
	return backend.NewTreeContext(dir, files)
}

// ImagePath is p as a path in an image (backend.ImagePath).
func ImagePath(p string) (string, error) { return backend.ImagePath(p) }

// RegistryRepo is the repository of registry that holds local's image
// (backend.RegistryRepo).
func RegistryRepo(registry, local string) (reference.Named, error) {
	return backend.RegistryRepo(registry, local)
}

// CheckRegistry refuses a registry images cannot be placed in
// (backend.CheckRegistry).
func CheckRegistry(registry string) error { return backend.CheckRegistry(registry) }
