// Command forwarder runs inside a cell: it listens on 127.0.0.1 and relays every TCP
// connection, byte for byte in both directions, to the skillgate gateway's unix socket,
// which is mounted read-only into the cell. The cell has no network; this is its only way
// to the model.
//
//	forwarder [-listen 127.0.0.1:8080] [-socket /skillgate/gateway.sock]
//	forwarder [flags] -exec CMD [ARG...]
//	forwarder -relay [-socket /skillgate/gateway.sock]
//
// With -exec it listens, then starts CMD, forwards signals to it, and exits with its exit
// code (128+N if a signal N ended it; 125 if the forwarder could not listen, 126 or 127
// if CMD could not be started). It writes nothing else to stdout or stderr, which are
// the agent's.
//
// With -relay it is the other end, for a cell that cannot reach the gateway's socket (a
// Kubernetes Pod on another node): it listens on the socket itself and carries each
// connection over its standard input and output, which skillgate holds through the API
// (see runner/gateway/tunnel). It ends when that stream does.
//
// A connection made before the socket is there (a relay still starting) waits for it, up
// to dialWait.
//
// It is built with CGO_ENABLED=0 and imports only the standard library and the
// tunnel package (itself only the standard library), so it runs in any image.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/skillgate/skillgate/runner/gateway/tunnel"
)

// dialWait bounds how long a connection waits for the gateway's socket to
// appear or to accept.
const dialWait = 30 * time.Second

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "TCP address to listen on")
	socket := flag.String("socket", "/skillgate/gateway.sock", "unix socket to relay to")
	execCmd := flag.Bool("exec", false, "run the remaining arguments as a command while forwarding")
	relayMode := flag.Bool("relay", false, "listen on -socket and carry its connections over standard input and output")
	flag.Parse()

	if *relayMode {
		ln, err := net.Listen("unix", *socket)
		if err != nil {
			fmt.Fprintf(os.Stderr, "forwarder: %v\n", err)
			os.Exit(125)
		}
		if err := tunnel.Relay(ln, tunnel.NewConn(os.Stdin, os.Stdout, nil)); err != nil {
			fmt.Fprintf(os.Stderr, "forwarder: %v\n", err)
			os.Exit(1)
		}
		return
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "forwarder: %v\n", err)
		os.Exit(125)
	}
	if !*execCmd {
		if err := forward(ln, *socket); err != nil {
			fmt.Fprintf(os.Stderr, "forwarder: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "forwarder: -exec needs a command")
		os.Exit(125)
	}
	go forward(ln, *socket) // the listener is up: the child can connect at once
	os.Exit(run(flag.Args()))
}

// run starts the command, forwards signals to it and returns its exit code.
func run(args []string) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "forwarder: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if err != nil && cmd.ProcessState == nil {
		return 126
	}
	return cmd.ProcessState.ExitCode()
}

// forward accepts connections until the listener fails and relays each to socket.
func forward(ln net.Listener, socket string) error {
	return tunnel.AcceptEach(ln, func(c net.Conn) { relay(c, socket) })
}

// relay copies both ways between c and a fresh connection to socket. When one side ends
// its writing, the other side's writing is closed too, so each peer sees the EOF it would
// see on a direct connection, and the relay ends when both directions have.
func relay(c net.Conn, socket string) {
	defer c.Close()
	u, err := dial(socket)
	if err != nil {
		return
	}
	defer u.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		if _, err := io.Copy(dst, src); err != nil {
			// Not a clean end: cut both sides.
			c.Close()
			u.Close()
			return
		}
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go pipe(u, c)
	go pipe(c, u)
	wg.Wait()
}

// dial connects to socket, waiting up to dialWait while it is not there or
// refuses.
func dial(socket string) (net.Conn, error) {
	deadline := time.Now().Add(dialWait)
	delay := 5 * time.Millisecond
	for {
		u, err := net.Dial("unix", socket)
		if err == nil || !(errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)) || time.Now().After(deadline) {
			return u, err
		}
		time.Sleep(delay)
		delay = min(2*delay, 500*time.Millisecond)
	}
}
