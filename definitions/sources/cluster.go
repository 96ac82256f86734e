package sources

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gangmap/gangmap/definitions"
)

// Cluster watches every Karta object (listing all and matching the root kind, never relying on
// index labels, whose two published sets disagree) and sets the registry's cluster source on
// each change. While the Karta CRD is not installed it checks again every CRDPoll, without
// slowing anything else.
type Cluster struct {
	Registry  *definitions.Registry
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
	// Recorder, when set, gets a Warning Event on each Karta with a problem (once per
	// resourceVersion and message).
	Recorder record.EventRecorder
	CRDPoll  time.Duration
	// Strict leaves out a Karta with unknown fields (a misspelt field the Karta CRD kept), with a
	// Warning Event; otherwise they are warnings.
	Strict bool

	mu       sync.Mutex
	reported map[string]bool
	// synced is set once the registry holds every Karta of the first full list, or once the API
	// server said the Karta API is not served (no Kartas exist).
	synced atomic.Bool
}

// Synced reports whether the registry's cluster source is complete as of the start: every Karta
// the first list returned is loaded (or rejected), or the API server answered that it does not
// serve run.ai/v1alpha1 at all. Until then a kind's only definition may be a Karta not loaded
// yet, so a caller that would otherwise group its pods by another rule (KAI's default grouper,
// minMember 1) must wait (podgrouper/core/kaiplugin does). A discovery error other than NotFound does
// not count as "not served".
func (c *Cluster) Synced() bool { return c.synced.Load() }

// Start implements manager.Runnable.
func (c *Cluster) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("definition-cluster")
	poll := c.CRDPoll
	if poll <= 0 {
		poll = 30 * time.Second
	}
	for !c.crdServed(ctx) {
		log.V(1).Info("Karta CRD not served; checking again later", "after", poll)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(c.Dynamic, 0)
	inf := factory.ForResource(definitions.GroupVersionResource).Informer()
	changed := make(chan struct{}, 1)
	notify := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: notify, UpdateFunc: func(_, n any) { notify(n) }, DeleteFunc: notify})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	// reg.HasSynced: the handler has also seen every object of the initial list.
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced) {
		return nil
	}
	log.Info("Watching Karta definitions in the cluster")
	// The initial list queued a change: this first sync covers it.
	select {
	case <-changed:
	default:
	}
	c.sync(ctx, inf.GetStore())
	c.synced.Store(true)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			c.sync(ctx, inf.GetStore())
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica loads definitions.
func (c *Cluster) NeedLeaderElection() bool { return false }

// crdServed reports whether the API server serves the Karta API. A NotFound answer (not served)
// also marks the source synced: there is no Karta to wait for.
func (c *Cluster) crdServed(ctx context.Context) bool {
	_, err := c.Discovery.ServerResourcesForGroupVersion(definitions.APIVersion)
	if apierrors.IsNotFound(err) && !c.synced.Load() {
		ctrl.LoggerFrom(ctx).V(1).Info("Karta API not served: no cluster definitions to wait for")
		c.synced.Store(true)
	}
	return err == nil
}

func (c *Cluster) sync(ctx context.Context, store cache.Store) {
	log := ctrl.LoggerFrom(ctx).WithName("definition-cluster")
	objs := map[string]*unstructured.Unstructured{}
	var loaded []*definitions.Loaded
	for _, item := range store.List() {
		u, ok := item.(*unstructured.Unstructured)
		if !ok || u.GetDeletionTimestamp() != nil {
			continue
		}
		l, err := definitions.FromUnstructured(u)
		if err != nil {
			log.Error(err, "A Karta does not decode; it is left out", "karta", u.GetName())
			c.warn(u, "InvalidDefinition", err.Error())
			continue
		}
		if c.Strict {
			if p := unknownField(l); p != "" {
				err := fmt.Errorf("%s: definition %q: %s: unknown field (strict mode; the grouper's --strict-definitions=false accepts it with a warning)", l.Origin, l.Name(), p)
				log.Error(err, "A Karta has an unknown field; it is left out", "karta", u.GetName())
				c.warn(u, "InvalidDefinition", err.Error())
				continue
			}
		}
		objs[l.Origin] = u
		loaded = append(loaded, l)
	}
	sort.Slice(loaded, func(i, j int) bool { return loaded[i].Name() < loaded[j].Name() })
	c.Registry.SetSource(definitions.SourceCluster, loaded)
	log.Info("Cluster definitions loaded", "definitions", len(loaded))
	logProblems(log, c.Registry, definitions.SourceCluster)
	for _, p := range c.Registry.Problems() {
		if u := objs[p.Origin]; u != nil {
			c.warn(u, "Definition"+p.Reason, p.Message)
		}
	}
}

func (c *Cluster) warn(u *unstructured.Unstructured, reason, msg string) {
	if c.Recorder == nil {
		return
	}
	key := fmt.Sprintf("%s|%s|%s", u.GetUID(), u.GetResourceVersion(), msg)
	c.mu.Lock()
	if c.reported == nil {
		c.reported = map[string]bool{}
	}
	seen := c.reported[key]
	c.reported[key] = true
	c.mu.Unlock()
	if !seen {
		c.Recorder.Event(u, corev1.EventTypeWarning, reason, msg)
	}
}

// unknownField returns the path of the first unknown field among the definition's warnings, or
// "" (definitions.Decode reports each as a field.Invalid with value "<unknown field>").
func unknownField(l *definitions.Loaded) string {
	for _, w := range l.Warnings {
		if w.BadValue == "<unknown field>" {
			return w.Field
		}
	}
	return ""
}
