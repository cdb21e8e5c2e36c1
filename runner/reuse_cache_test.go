package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/cache"
	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/gateway/standin"
	"github.com/skillgate/skillgate/runner/reuse"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestReuseFromCache: a run with KeepRollouts keeps its rollouts (records,
// exchange logs, bodies) in the machine's cache; a fresh folder with
// --reuse cache takes every cell and runs none; a kept rollout damaged on
// disk (one exchange body changed) is refused, removed and its cell run,
// then kept again by a run that keeps rollouts; gc removes kept rollouts unused for longer than its bound,
// and the folders that took them keep their copies. The model is a
// stand-in provider on loopback (runner/gateway/standin), not a model.
func TestReuseFromCache(t *testing.T) {
	e := dockertest.Engine(t)
	t.Setenv("SKILLGATE_TEST_KEY", "sk-ant-stand-in")
	up := standin.New(t, false)
	root, dir := standinReuseSuite(t, up, "runtest-reuse-cache", "hi", 1, twoCases, "policy: policies.advisory")
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	s := runSuite{Dir: dir, Plan: p}
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"="+p.Suite.Name) })
	cacheDir := t.TempDir()
	c, err := cache.Open(cacheDir)
	if err != nil {
		t.Fatal(err)
	}

	first := filepath.Join(t.TempDir(), "first")
	if sum := s.run(t, first, Options{Cache: cacheDir, KeepRollouts: true}); sum.Ran != 4 {
		t.Fatalf("first run: %+v", sum)
	}
	kept, err := c.RolloutEntries()
	if err != nil || len(kept) != 4 {
		t.Fatalf("the cache keeps %d rollouts (%v), want 4", len(kept), err)
	}
	before := stored(t, first)
	var victim plan.Cell
	for _, cell := range p.Cells {
		ro := before[cell.ID]
		if ro == nil || ro.Gateway == nil || ro.Gateway.Exchanges == "" {
			t.Fatalf("%s: no exchange log recorded: %+v", cell.ID, ro)
		}
		if _, err := gateway.ReadLog(c.RolloutDir(cell.Rollout), ro.Gateway.Exchanges); err != nil {
			t.Errorf("%s: the kept rollout's exchange log: %v", cell.ID, err)
		}
		victim = cell
	}

	// A fresh folder takes every cell from the cache, runs none.
	second := filepath.Join(t.TempDir(), "second")
	sum := s.run(t, second, Options{Cache: cacheDir, Reuse: reuse.FromCache})
	if sum.Taken != 4 || sum.Ran != 0 {
		t.Fatalf("--reuse cache: %+v, want 4 cells taken, none run", sum)
	}
	ledger, err := reuse.Ledger(second)
	if err != nil {
		t.Fatal(err)
	}
	for id, ro := range stored(t, second) {
		taken, ok := ledger[ro.Key]
		if !ok || taken.From != reuse.CacheName(c.Dir) || !taken.RanAt.Equal(before[id].StartedAt) || ro.Answer != before[id].Answer {
			t.Errorf("%s: ledger %+v, answer %q; want the first run's record taken from the cache", id, taken, ro.Answer)
		}
		if _, err := gateway.ReadLog(second, ro.Gateway.Exchanges); err != nil {
			t.Errorf("%s: the taken rollout's exchange log: %v", id, err)
		}
	}

	// One exchange body of a kept rollout changed on disk: refused, removed,
	// its cell runs, and is kept again.
	l, err := gateway.ReadLog(c.RolloutDir(victim.Rollout), before[victim.ID].Gateway.Exchanges)
	if err != nil || len(l.Exchanges) == 0 {
		t.Fatalf("exchange log of %s: %v", victim.ID, err)
	}
	body := filepath.Join(c.RolloutDir(victim.Rollout), filepath.FromSlash(gateway.BodyPath(l.Exchanges[0].Response.Digest)))
	if err := os.WriteFile(body, []byte(`{"edited":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	third := filepath.Join(t.TempDir(), "third")
	var log bytes.Buffer
	sum, err = Run(context.Background(), p, Options{Out: third, SuiteDir: dir, Jobs: 4, Cache: cacheDir, Reuse: reuse.FromCache, Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if sum.Taken != 3 || sum.Ran != 1 {
		t.Errorf("with a damaged kept rollout: %+v, want 3 taken and 1 run\n%s", sum, log.String())
	}
	for _, want := range []string{"reuse: not taken, failed verification: rollout " + victim.Rollout.Encoded()[:12], c.RolloutDir(victim.Rollout), "removed from the cache"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
	if ledger, _ := reuse.Ledger(third); len(ledger) != 3 {
		t.Errorf("reused.json lists %d rollouts, want 3", len(ledger))
	}
	if ro := stored(t, third)[victim.ID]; ro == nil || ro.StartedAt.Equal(before[victim.ID].StartedAt) {
		t.Errorf("%s was not run again: %+v", victim.ID, ro)
	}
	if _, err := os.Stat(c.RolloutDir(victim.Rollout)); err == nil {
		t.Errorf("the damaged kept rollout is still in the cache")
	}
	// Its cell run again with KeepRollouts keeps it again.
	if sum := s.run(t, filepath.Join(t.TempDir(), "fourth"), Options{Cache: cacheDir, Reuse: reuse.FromCache, KeepRollouts: true}); sum.Taken != 3 || sum.Ran != 1 {
		t.Errorf("--reuse cache --keep-rollouts after the removal: %+v, want 3 taken and 1 run", sum)
	}
	if sum := s.run(t, filepath.Join(t.TempDir(), "fifth"), Options{Cache: cacheDir, Reuse: reuse.FromCache}); sum.Taken != 4 || sum.Ran != 0 {
		t.Errorf("after the damaged rollout was kept again: %+v, want 4 taken", sum)
	}

	// gc removes the kept rollouts unused for two days, keeps the snapshots
	// used now; the folders that took them keep their copies.
	old := time.Now().Add(-48 * time.Hour)
	for _, cell := range p.Cells {
		os.Chtimes(filepath.Join(c.RolloutDir(cell.Rollout), cache.FileRolloutEntry), old, old)
	}
	res, err := c.GC(0, 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.RemovedRollouts != 4 || res.Removed != 4 || res.KeptRollouts != 0 {
		t.Errorf("gc: %+v, want the 4 kept rollouts removed and the snapshots kept", res)
	}
	if left, _ := c.RolloutEntries(); len(left) != 0 {
		t.Errorf("%d kept rollouts left after gc", len(left))
	}
	st := &store.Store{Dir: second}
	for _, cell := range p.Cells {
		if _, ok, err := st.Rollout(cell.Rollout); !ok || err != nil {
			t.Errorf("%s: the folder that took it lost it to gc: %v", cell.ID, err)
		}
	}
	if sum := s.run(t, filepath.Join(t.TempDir(), "sixth"), Options{Cache: cacheDir, Reuse: reuse.FromCache}); sum.Taken != 0 {
		t.Errorf("after gc: %+v, want nothing taken", sum)
	}
}
