package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podWatch is one watch of every skillgate Pod of the namespace, shared by
// the cells: a cell waits on its Pod's changes instead of polling the API,
// so a run of many cells costs the API one watch.
type podWatch struct {
	store  cache.Store
	cancel context.CancelFunc

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]bool // by Pod name
}

func watchPods(ctx context.Context, cs kubernetes.Interface, ns string) (*podWatch, error) {
	lw := cache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "pods", ns, func(o *metav1.ListOptions) {
		o.LabelSelector = LabelManaged + "=" + managedBy
		o.FieldSelector = fields.Everything().String()
	})
	w := &podWatch{waiters: map[string]map[chan struct{}]bool{}}
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	notify := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok {
			w.notify(p.Name)
		}
	}
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj any) { notify(obj) },
		DeleteFunc: notify,
	})
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.store, w.cancel = inf.GetStore(), cancel
	go inf.Run(wctx.Done())
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	if !cache.WaitForCacheSync(sctx.Done(), inf.HasSynced) {
		cancel()
		return nil, fmt.Errorf("watch pods in %s: the first list did not complete", ns)
	}
	return w, nil
}

func (w *podWatch) stop() { w.cancel() }

func (w *podWatch) notify(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.waiters[name] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// until waits until cond holds for the Pod as last seen (nil once it is
// gone), returning cond's error; the Pod is checked at each of its changes.
func (w *podWatch) until(ctx context.Context, ns, name string, cond func(*corev1.Pod) (bool, error)) error {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.waiters[name] == nil {
		w.waiters[name] = map[chan struct{}]bool{}
	}
	w.waiters[name][ch] = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.waiters[name], ch)
		if len(w.waiters[name]) == 0 {
			delete(w.waiters, name)
		}
		w.mu.Unlock()
	}()
	// A slow tick as well: a change seen before the waiter was registered
	// is not missed for long.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		var p *corev1.Pod
		if obj, ok, _ := w.store.GetByKey(ns + "/" + name); ok {
			p = obj.(*corev1.Pod)
		}
		if done, err := cond(p); done || err != nil {
			return err
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
