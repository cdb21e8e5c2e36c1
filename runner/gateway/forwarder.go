package gateway

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
)

// The forwarder runs inside cells, which have no network: it listens on
// 127.0.0.1 and relays to the gateway's unix socket. It is a static
// program of this project (runner/gateway/forwarder), built by `go generate` and
// embedded, so that skillgate needs no Go toolchain at run time and works
// however it was itself built. TestEmbeddedForwarderIsCurrent checks that
// the embedded binary is the current source's.
//
//go:generate sh -c "CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags='-s -w -buildid=' -o assets/forwarder ./forwarder && go version | cut -d' ' -f3 > assets/forwarder.go-version"

//go:embed assets/forwarder
var forwarderBinary []byte

//go:embed assets/forwarder.go-version
var forwarderGoVersion string

// ForwarderPath is where the forwarder is in a cell: the gateway folder,
// mounted read-only.
const ForwarderPath = "/skillgate/forwarder"

// WriteForwarder puts the forwarder next to the gateway's socket.
func WriteForwarder(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "forwarder"), forwarderBinary, 0o755); err != nil {
		return fmt.Errorf("write forwarder: %w", err)
	}
	return nil
}
