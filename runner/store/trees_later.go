package store

import (
	"slices"
	"sync"

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// laterPins are the trees a store is pinning while the run's first cells
// run (PinLater).
type laterPins struct {
	mu   sync.Mutex
	pins map[digest.Digest]*laterPin
}

type laterPin struct {
	done chan struct{}
	err  error
}

// PinLater pins the tree want as PinTree does, in the background: a run
// places a snapshot its cells do not read while they run (a fixture whose
// cell images are built) while its first cells run. AwaitTree waits for it;
// AwaitPins for all. It is called before any reader of the store starts.
func (s *Store) PinLater(what, src string, want plan.Tree) {
	if s.later == nil {
		s.later = &laterPins{pins: map[digest.Digest]*laterPin{}}
	}
	s.later.mu.Lock()
	defer s.later.mu.Unlock()
	if s.later.pins[want.Digest] != nil {
		return
	}
	p := &laterPin{done: make(chan struct{})}
	s.later.pins[want.Digest] = p
	go func() {
		defer close(p.done)
		_, p.err = s.PinTree(what, src, want)
	}()
}

// AwaitTree waits until the tree of that digest, when PinLater is pinning
// it, is in the store, and returns the pin's error.
func (s *Store) AwaitTree(tree digest.Digest) error {
	if s.later == nil {
		return nil
	}
	s.later.mu.Lock()
	p := s.later.pins[tree]
	s.later.mu.Unlock()
	if p == nil {
		return nil
	}
	<-p.done
	return p.err
}

// AwaitPins waits for every tree PinLater is pinning and returns the first
// error, by digest order.
func (s *Store) AwaitPins() error {
	if s.later == nil {
		return nil
	}
	s.later.mu.Lock()
	var trees []digest.Digest
	for d := range s.later.pins {
		trees = append(trees, d)
	}
	s.later.mu.Unlock()
	slices.Sort(trees)
	var first error
	for _, d := range trees {
		if err := s.AwaitTree(d); err != nil && first == nil {
			first = err
		}
	}
	return first
}
