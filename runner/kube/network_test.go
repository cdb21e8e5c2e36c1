package kube_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/kube/kubetest"
)

// A cell's Pod has no network: loopback is its only interface, and the
// cluster's own ports on the host's loopback, which the host reaches, are
// refused from inside. Its one way out is the gateway's folder, mounted from
// the node: the forwarder inside relays to a unix socket served on the host.
func TestCellHasNoNetwork(t *testing.T) {
	c := kubetest.Cluster(t)
	labels := testLabels(t, c)
	image := cellImage(t, c, labels)

	// The control: from the host, the apiserver and the kubelet answer.
	for _, addr := range []string{"127.0.0.1:6443", "127.0.0.1:10250"} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("the host does not reach %s either: %v", addr, err)
		}
		conn.Close()
	}

	// A stand-in for the gateway: a unix socket in a folder the Pod mounts.
	dir, err := os.MkdirTemp("", "sg-kube-gw-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := gateway.WriteForwarder(dir); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "gateway.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(sock, 0o666)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("via the gateway " + r.URL.Path + "\n")) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	col := collected{}
	script := `cat /proc/net/dev | awk 'NR>2 {sub(":","",$1); print "if=" $1}'
ls /sys/class/net | sed 's/^/sys=/'
for a in 127.0.0.1:6443 127.0.0.1:10250 127.0.0.1:10248; do
	echo | nc -w 2 ${a%:*} ${a#*:} 2>/dev/null && echo "reached $a" || echo "refused $a"
done
printf 'GET /model HTTP/1.0\r\n\r\n' | nc -w 5 127.0.0.1 8080`
	s := spec(image, labels, script, col)
	s.Cmd = []string{gateway.ForwarderPath, "-exec", "sh", "-c", script}
	s.Binds = []string{dir + ":/skillgate:ro"}
	out, err := c.RunContainer(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	got := string(out.Stdout)
	t.Logf("exit %d\nstdout:\n%s\nstderr: %s", out.ExitCode, got, out.Stderr)
	var ifs []string
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "if=") || strings.HasPrefix(l, "sys=") {
			ifs = append(ifs, l)
		}
	}
	if strings.Join(ifs, ",") != "if=lo,sys=lo" {
		t.Errorf("interfaces %q, want lo alone", ifs)
	}
	for _, a := range []string{"127.0.0.1:6443", "127.0.0.1:10250", "127.0.0.1:10248"} {
		if !strings.Contains(got, "refused "+a) {
			t.Errorf("the cell reached %s", a)
		}
	}
	if !strings.Contains(got, "via the gateway /model\n") || out.ExitCode != 0 {
		t.Errorf("the gateway was not reached through its folder: exit %d", out.ExitCode)
	}
}
