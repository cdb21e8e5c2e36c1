package kube_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/kube"
	"github.com/skillgate/skillgate/runner/kube/kubetest"
)

// A cell's Pod has no network: loopback is its only interface, and the
// cluster's own ports on the host's loopback, which the host reaches, are
// refused from inside. Its one way out is the gateway: relayed through the
// API by default, so that the Pod may run on any node and has no folder of
// the host (its spec holds no hostPath), or, on a one-node cluster, its
// folder mounted from the node. Either way the forwarder inside reaches a
// unix socket served on the host.
func TestCellHasNoNetwork(t *testing.T) {
	for _, mode := range []struct {
		name     string
		hostPath bool
	}{{"through the API", false}, {"by hostPath", true}} {
		t.Run(mode.name, func(t *testing.T) {
			c := kubetest.ClusterWith(t, kube.Config{HostPath: mode.hostPath})
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

			// A stand-in for the gateway: a unix socket in a folder of the host.
			dir := gatewayFolder(t)
			if err := gateway.WriteForwarder(dir); err != nil {
				t.Fatal(err)
			}
			sock := filepath.Join(dir, gateway.GatewaySocket)
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			os.Chmod(sock, 0o666)
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				fmt.Fprintf(w, "via the gateway %s %d\n", r.URL.Path, len(body))
			})}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })

			// The Pod's volumes, as the API has them while it runs.
			vols := podVolumes(t, labels)

			col := collected{}
			script := `cat /proc/net/dev | awk 'NR>2 {sub(":","",$1); print "if=" $1}'
ls /sys/class/net | sed 's/^/sys=/'
for a in 127.0.0.1:6443 127.0.0.1:10250 127.0.0.1:10248; do
	echo | nc -w 2 ${a%:*} ${a#*:} 2>/dev/null && echo "reached $a" || echo "refused $a"
done
printf 'GET /model HTTP/1.0\r\n\r\n' | nc -w 5 127.0.0.1 8080
# A request with a body, then four at once.
body=$(head -c 300000 /dev/zero | tr '\0' x)
printf 'POST /big HTTP/1.0\r\nContent-Length: 300000\r\n\r\n%s' "$body" | nc -w 5 127.0.0.1 8080
for i in 1 2 3 4; do printf 'GET /many HTTP/1.0\r\n\r\n' | nc -w 5 127.0.0.1 8080 > /tmp/many.$i & done
wait
cat /tmp/many.*
touch /skillgate/forged 2>/dev/null && echo "wrote the gateway folder" || true`
			s := spec(image, labels, script, col)
			s.Cmd = []string{gateway.ForwarderPath, "-exec", "sh", "-c", script}
			s.Gateway = dir + ":/skillgate"
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
			if !strings.Contains(got, "via the gateway /model 0\n") || out.ExitCode != 0 {
				t.Errorf("the gateway was not reached: exit %d", out.ExitCode)
			}
			if !strings.Contains(got, "via the gateway /big 300000\n") {
				t.Errorf("a request's body did not reach the gateway whole")
			}
			if n := strings.Count(got, "via the gateway /many 0\n"); n != 4 {
				t.Errorf("%d of 4 connections at once reached the gateway", n)
			}
			if strings.Contains(got, "wrote the gateway folder") {
				t.Errorf("the agent wrote to the gateway's folder")
			}
			hostPaths := 0
			for _, v := range vols() {
				if v.HostPath != nil {
					hostPaths++
				}
			}
			if mode.hostPath != (hostPaths > 0) {
				t.Errorf("hostPath volumes in the pod: %d, want them %v", hostPaths, mode.hostPath)
			}
		})
	}
}

// podVolumes watches for the Pod labelled as labels and returns a function
// that gives its volumes once it has been seen.
func podVolumes(t *testing.T, labels map[string]string) func() []corev1.Volume {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubetest.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var mu sync.Mutex
	var vols []corev1.Volume
	seen := make(chan struct{})
	go func() {
		for ctx.Err() == nil {
			pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: dockertest.Label + "=" + labels[dockertest.Label]})
			if err == nil && len(pods.Items) > 0 {
				mu.Lock()
				vols = pods.Items[0].Spec.Volumes
				mu.Unlock()
				close(seen)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return func() []corev1.Volume {
		select {
		case <-seen:
		case <-time.After(time.Second):
			t.Fatal("the pod was never seen")
		}
		mu.Lock()
		defer mu.Unlock()
		return vols
	}
}

// A relay that cannot run (here: the gateway's folder holds no forwarder)
// fails the cell as the cluster's failure, an error, never as the agent's
// outcome: its model calls had nowhere to go.
func TestRelayFailureIsTheClusters(t *testing.T) {
	c := kubetest.Cluster(t)
	labels := testLabels(t, c)
	image := cellImage(t, c, labels)
	dir := gatewayFolder(t)
	s := spec(image, labels, "sleep 3", collected{})
	s.Gateway = dir + ":/skillgate"
	out, err := c.RunContainer(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "relay the gateway into pod") {
		t.Fatalf("a cell whose relay failed: outcome %+v, error %v; want the relay's error", out, err)
	}
}

// gatewayFolder is a fresh folder of the host for a gateway's socket, which
// the cluster's user can enter, gone when the test ends (not under the test's
// own temporary folder: a unix socket's path is bounded).
func gatewayFolder(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sg-kube-gw-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
