package backend

// Labels skillgate puts on what it creates.
const (
	LabelImage = "dev.skillgate.image" // kind of image: sandbox, cell
	LabelRun   = "dev.skillgate.run"   // one invocation of skillgate run
	LabelOut   = "dev.skillgate.out"   // digest of the run folder's path
	LabelCell  = "dev.skillgate.cell"  // the cell's ID
	LabelPlan  = "dev.skillgate.plan"  // the plan's digest
	LabelSuite = "dev.skillgate.suite" // the suite's name
	LabelKind  = "dev.skillgate.kind"  // what a container is for: a check container is "check"
	// LabelCellKey is a cell image's key: the digest of the agent image ID
	// and of every tree it holds, each verified while the image was built.
	// An image found by its tag is reused only when it carries its key.
	LabelCellKey = "dev.skillgate.cell-key"
)

// Workspace is where a cell's fixture lives and the agent starts.
const Workspace = "/workspace"

// CellImageRepo is the repository of cell images.
const CellImageRepo = "skillgate/cell"

// Labels of an agent image besides LabelImage=agent.
const (
	LabelAgent        = "dev.skillgate.agent"
	LabelAgentVersion = "dev.skillgate.agent-version"
)

// Labels of an environment's images.
const (
	// LabelEnvKey is the digest of all an environment image was built from (a
	// Debian root's release, packages and mirror; a Dockerfile folder's tree and its
	// base image ID); an image found by its tag is reused only when it carries it.
	LabelEnvKey = "dev.skillgate.env-key"
	// LabelDebianRelease and LabelDebianPackages describe a Debian root.
	LabelDebianRelease  = "dev.skillgate.debian-release"
	LabelDebianPackages = "dev.skillgate.debian-packages"
	// LabelDebianMirror is the mirror a Debian root was bootstrapped from.
	LabelDebianMirror = "dev.skillgate.debian-mirror"
)
