package docker

// What the package's external tests reach inside it for.
var (
	CreateContainer = (*Engine).createContainer
	LayerEpoch      = layerEpoch
)
