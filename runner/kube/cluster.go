package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skillgate/skillgate/runner/backend"
)

// Config names the cluster and the namespace as kubectl finds them.
type Config struct {
	// Kubeconfig is a kubeconfig file; empty reads $KUBECONFIG, then ~/.kube/config.
	Kubeconfig string
	// Context is the kubeconfig's context to use; empty is its current context.
	Context string
	// Namespace is where the Pods run; empty is the context's, else "default".
	Namespace string
	// HostPath mounts the folders of skillgate's machine a Pod is given (the
	// gateway's, a case's) by hostPath, for a cluster whose one node is that
	// machine. Otherwise their content is streamed into each Pod and the
	// gateway is relayed through the API, so that Pods run on any node.
	HostPath bool
	// Registry, when set, is the registry (HOST[:PORT][/PATH]) the nodes
	// pull the images a Pod starts from, pushed there by skillgate image
	// push: a Pod names its image by the digest that push recorded for the
	// local engine's build. Empty: the images are loaded into the nodes.
	Registry string
}

// LabelManaged marks every Pod skillgate starts, and selects them for its
// network policy and for the watch of their states.
const LabelManaged = "app.kubernetes.io/managed-by"

// managedBy is LabelManaged's value.
const managedBy = "skillgate"

// NetworkPolicyName is the policy that denies cell and check Pods all
// traffic, in and out, where the cluster's network plugin enforces policies.
const NetworkPolicyName = "skillgate-no-network"

// cleanupTimeout bounds the work done on a fresh context after the caller's
// context is cancelled (deleting a Pod after Ctrl-C).
const cleanupTimeout = 30 * time.Second

// Cluster is skillgate's handle on a Kubernetes cluster: cells and checks run
// there as Pods, images are built and named by the local Docker engine. It is
// safe for concurrent use.
type Cluster struct {
	cs        kubernetes.Interface
	rest      *rest.Config
	namespace string
	registry  string
	pods      *podWatch
	hostPath  bool

	local      func(context.Context) (backend.LocalEngine, error)
	dockerOnce sync.Once
	docker     backend.LocalEngine
	dockerErr  error

	mu    sync.Mutex
	cells map[string]*cellImage // by tag and by ID

	pidsOnce sync.Once
	pids     int64
	pidsErr  error
}

// Connect loads the kubeconfig as kubectl does, checks that the cluster
// answers, makes sure the namespace's network policy for skillgate's Pods
// exists and starts watching them. local connects, on first use, to the
// engine of skillgate's machine that builds and names the images.
func Connect(ctx context.Context, cfg Config, local func(context.Context) (backend.LocalEngine, error)) (*Cluster, error) {
	if cfg.Registry != "" {
		if err := backend.CheckRegistry(cfg.Registry); err != nil {
			return nil, fmt.Errorf("connect kubernetes cluster: %w", err)
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.Kubeconfig != "" {
		rules.ExplicitPath = cfg.Kubeconfig
	}
	over := &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}
	if cfg.Namespace != "" {
		over.Context.Namespace = cfg.Namespace
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over)
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("connect kubernetes cluster: %w (set KUBECONFIG or --kubeconfig; .ci/kube-up starts a local cluster)", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("connect kubernetes cluster: %w", err)
	}
	// Every cell polls nothing, but a run creates, attaches, execs and
	// deletes several objects per cell: client-go's default of 5 requests a
	// second would pace the run.
	rc.QPS, rc.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("connect kubernetes cluster: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Get(pctx, ns, metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("connect kubernetes cluster %s, namespace %s: %w", rc.Host, ns, err)
	}
	c := &Cluster{cs: cs, rest: rc, namespace: ns, registry: cfg.Registry, cells: map[string]*cellImage{}, hostPath: cfg.HostPath, local: local}
	if err := c.ensureNetworkPolicy(pctx); err != nil {
		return nil, err
	}
	if c.pods, err = watchPods(ctx, cs, ns); err != nil {
		return nil, err
	}
	return c, nil
}

// Namespace is where the cluster's Pods run.
func (c *Cluster) Namespace() string { return c.namespace }

// Close stops the watch and releases the Docker engine.
func (c *Cluster) Close() error {
	c.pods.stop()
	if c.docker != nil {
		return c.docker.Close()
	}
	return nil
}

// ensureNetworkPolicy creates the policy that lets skillgate's Pods reach
// nothing and be reached by nothing. Where the network plugin ignores
// policies (this repository's local cluster gives Pods no interface but
// loopback instead) it is inert; where it enforces them it is what keeps
// a cell off the network.
func (c *Cluster) ensureNetworkPolicy(ctx context.Context) error {
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyName, Labels: map[string]string{LabelManaged: managedBy}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelManaged: managedBy}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
	_, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Create(ctx, np, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create network policy %s in %s: %w", NetworkPolicyName, c.namespace, err)
	}
	return nil
}

// Sweep deletes, at once, every Pod of the namespace carrying label (a key,
// or key=value), such as the Pods of a run that died, and returns how many it
// deleted.
func (c *Cluster) Sweep(ctx context.Context, label string) (int, error) {
	list, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: label})
	if err != nil {
		return 0, fmt.Errorf("list pods: %w", err)
	}
	n := 0
	var failed []error
	for _, p := range list.Items {
		switch err := c.deletePod(ctx, p.Name); {
		case err == nil:
			n++
		case apierrors.IsNotFound(err):
		default:
			failed = append(failed, err)
		}
	}
	return n, errors.Join(failed...)
}

// Pods lists the names of the namespace's Pods carrying label (a key, or
// key=value) that are not being deleted.
func (c *Cluster) Pods(ctx context.Context, label string) ([]string, error) {
	list, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: label})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	var names []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	return names, nil
}

// deletePod deletes a Pod with no grace period: its containers are killed,
// and the API forgets it at once.
func (c *Cluster) deletePod(ctx context.Context, name string) error {
	zero := int64(0)
	bg := metav1.DeletePropagationBackground
	err := c.cs.CoreV1().Pods(c.namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero, PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s: %w", name, err)
	}
	return err
}

// podPidsLimit is the loosest process limit of the cluster's nodes: the
// kubelet's podPidsLimit, Kubernetes' only limit on a Pod's processes. It
// is read once, through the nodes' configz, where the API proxies to it; 0
// means no node's could be read.
func (c *Cluster) podPidsLimit(ctx context.Context) (int64, error) {
	c.pidsOnce.Do(func() {
		nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			c.pidsErr = fmt.Errorf("list nodes: %w", err)
			return
		}
		if len(nodes.Items) == 0 {
			c.pidsErr = errors.New("read the nodes' process limit: the cluster has no node")
			return
		}
		for _, n := range nodes.Items {
			raw, err := c.cs.CoreV1().RESTClient().Get().Resource("nodes").Name(n.Name).SubResource("proxy", "configz").DoRaw(ctx)
			if err != nil {
				// The API may not proxy to the kubelet (the local cluster's
				// does not): the limit cannot be read, only the node's
				// configuration keeps it.
				continue
			}
			var cz struct {
				Kubelet struct {
					PodPidsLimit *int64 `json:"podPidsLimit"`
				} `json:"kubeletconfig"`
			}
			if err := json.Unmarshal(raw, &cz); err != nil {
				c.pidsErr = fmt.Errorf("read the process limit of node %s: %w", n.Name, err)
				return
			}
			lim := int64(-1)
			if cz.Kubelet.PodPidsLimit != nil {
				lim = *cz.Kubelet.PodPidsLimit
			}
			if lim <= 0 {
				c.pidsErr = fmt.Errorf("node %s sets no podPidsLimit in its kubelet: a cell's limits.pids cannot be kept there (set the kubelet's podPidsLimit)", n.Name)
				return
			}
			c.pids = max(c.pids, lim)
		}
	})
	return c.pids, c.pidsErr
}

// checkPids fails when the nodes keep no process limit at all; a node's
// limit looser than asked is the one a Pod gets, since Kubernetes has no
// per-Pod setting.
func (c *Cluster) checkPids(ctx context.Context, want int64) error {
	if want <= 0 {
		return nil
	}
	_, err := c.podPidsLimit(ctx)
	return err
}

// podRunning is whether a container of the Pod has started, ended, or cannot
// start; it says which, and why not.
func containerState(p *corev1.Pod, name string, init bool) (corev1.ContainerState, bool) {
	sts := p.Status.ContainerStatuses
	if init {
		sts = p.Status.InitContainerStatuses
	}
	for _, s := range sts {
		if s.Name == name {
			return s.State, true
		}
	}
	return corev1.ContainerState{}, false
}
