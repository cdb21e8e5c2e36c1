package cell

import "github.com/opencontainers/go-digest"

// CellGatewayMount is where the gateway's folder (its socket and the
// forwarder) is mounted read-only in a cell.
const CellGatewayMount = "/skillgate"

// OutLabel is the label value that names a run folder on what skillgate starts for it.
func OutLabel(out string) string {
	return digest.FromString(out).Encoded()[:16]
}
