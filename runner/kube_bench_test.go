package runner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/internal/benchtest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/kube"
	"github.com/skillgate/skillgate/runner/kube/kubetest"

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/skillgate/skillgate/runner"
)

// runPlanOn runs the whole plan into a fresh run folder on the backend k
// names (nil: Docker) and returns its wall time and the run folder.
func runPlanOn(b *testing.B, dir string, p *plan.Plan, jobs int, k *kube.Config) (time.Duration, string) {
	b.Helper()
	out := b.TempDir()
	t0 := time.Now()
	sum, err := runner.Run(context.Background(), p, runner.Options{Out: out, SuiteDir: dir, Jobs: jobs, Kubernetes: k})
	el := time.Since(t0)
	if err != nil {
		b.Fatal(err)
	}
	if sum.Ran != len(p.Cells) || sum.Statuses[store.StatusCompleted] != len(p.Cells) {
		b.Fatalf("run: %+v; want %d completed cells run", sum, len(p.Cells))
	}
	return el, out
}

// kubeBench is the cluster of a benchmark, with the sandbox image loaded.
func kubeBench(b *testing.B) *kube.Config {
	b.Helper()
	cfg := &kube.Config{Kubeconfig: kubetest.Kubeconfig(b)}
	e, err := docker.NewEngine(context.Background())
	if err != nil {
		b.Skipf("no Docker engine: %v", err)
	}
	defer e.Close()
	sandbox, err := e.EnsureSandbox(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	kubetest.Load(b, sandbox)
	return cfg
}

// BenchmarkPodOverhead compares skillgate's wall time per cell (agent
// `true`, one job, cell content prepared) on Kubernetes, one Pod per cell,
// with the same cells on Docker, one container per cell, alternating the two.
// It reports the ratio of the sums and its min, median and max over the
// iterations, and each side's phases.
func BenchmarkPodOverhead(b *testing.B) {
	const name, trials = "bench-pod-overhead", 10
	needDocker(b, name)
	k := kubeBench(b)
	dir, p := writeSuite(b, benchSuite{name: name, trials: trials, command: []string{"true"}})
	runPlanOn(b, dir, p, 1, nil) // the cell image, and both sides warm
	runPlanOn(b, dir, p, 1, k)

	var pod, ctr time.Duration
	var ratios []float64
	var phPod, phCtr phases
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var onPod, onCtr time.Duration
		kubernetes := func() {
			el, out := runPlanOn(b, dir, p, 1, k)
			onPod = el
			phPod.add(rollouts(b, p, out), el)
		}
		docker := func() {
			el, out := runPlanOn(b, dir, p, 1, nil)
			onCtr = el
			phCtr.add(rollouts(b, p, out), el)
		}
		if i%2 == 0 {
			kubernetes()
			docker()
		} else {
			docker()
			kubernetes()
		}
		pod, ctr = pod+onPod, ctr+onCtr
		ratios = append(ratios, float64(onPod)/float64(onCtr))
	}
	b.StopTimer()
	cells := float64(b.N * trials)
	b.ReportMetric(pod.Seconds()/cells, "pod-s/cell")
	b.ReportMetric(ctr.Seconds()/cells, "container-s/cell")
	b.ReportMetric(float64(pod)/float64(ctr), "ratio")
	benchtest.ReportSpread(b, "ratio", ratios)
	phPod.report(b, "kubernetes", 1)
	phCtr.report(b, "docker", 1)
}

// BenchmarkGatewayRelay compares a cell's wall time on Kubernetes with the
// gateway relayed through the API (the default: Pods on any node) against
// the same cells with the gateway's folder mounted from the node by
// hostPath, alternating the two: the relay's cost is the forwarder streamed
// into each Pod and the exec that runs it. The agent (`true`, one job) makes
// no call, so the figure is the relay's start-up, which every cell pays.
func BenchmarkGatewayRelay(b *testing.B) {
	const name, trials = "bench-gateway-relay", 10
	needDocker(b, name)
	relayed := kubeBench(b)
	hostPath := *relayed
	hostPath.HostPath = true
	dir, p := writeSuite(b, benchSuite{name: name, trials: trials, command: []string{"true"}, provider: "scripted"})
	runPlanOn(b, dir, p, 1, relayed) // the cell image, and both sides warm
	runPlanOn(b, dir, p, 1, &hostPath)

	var sumRelay, sumHost time.Duration
	var ratios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var r, h time.Duration
		run := []func(){
			func() { r, _ = runPlanOn(b, dir, p, 1, relayed) },
			func() { h, _ = runPlanOn(b, dir, p, 1, &hostPath) },
		}
		if i%2 == 1 {
			run[0], run[1] = run[1], run[0]
		}
		run[0]()
		run[1]()
		sumRelay, sumHost = sumRelay+r, sumHost+h
		ratios = append(ratios, float64(r)/float64(h))
	}
	b.StopTimer()
	cells := float64(b.N * trials)
	b.ReportMetric(sumRelay.Seconds()/cells, "relay-s/cell")
	b.ReportMetric(sumHost.Seconds()/cells, "hostpath-s/cell")
	b.ReportMetric(float64(sumRelay)/float64(sumHost), "ratio")
	benchtest.ReportSpread(b, "ratio", ratios)
}

// BenchmarkPodsInFlight runs 32 cells of `sleep 5` with --jobs 32 on
// Kubernetes and counts the run's Pods in flight, sampled every 100 ms: the
// most at once against the 32 asked for, and the run's wall time against
// one cell's agent time.
func BenchmarkPodsInFlight(b *testing.B) {
	const name, trials, jobs = "bench-pods-in-flight", 32, 32
	needDocker(b, name)
	k := kubeBench(b)
	c := kubetest.Cluster(b)
	dir, p := writeSuite(b, benchSuite{name: name, trials: trials, command: []string{"sleep", "5"}})
	runPlanOn(b, dir, p, 1, nil) // the cell image
	var most int
	var wall time.Duration
	var ph phases
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				pods, err := c.Pods(context.Background(), docker.LabelSuite+"="+name)
				if err == nil {
					most = max(most, len(pods))
				}
			}
		}()
		el, out := runPlanOn(b, dir, p, jobs, k)
		close(stop)
		wg.Wait()
		wall += el
		ph.add(rollouts(b, p, out), el)
	}
	b.StopTimer()
	b.ReportMetric(float64(most), "pods-in-flight-max")
	b.ReportMetric(wall.Seconds()/float64(b.N), "wall-s")
	b.ReportMetric(wall.Seconds()/float64(b.N)/5, "wall/agent")
	ph.report(b, "kubernetes jobs 32", jobs)
}
