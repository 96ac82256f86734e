package framework

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// KAIPodGrouper is a stand-in for KAI Scheduler's own pod-grouper (v0.15–v0.17, no KAI code),
// for tests of gangmap beside it. It copies these behaviours of KAI:
//   - it reconciles every pod whose spec.schedulerName is "kai-scheduler", on pod events only (it
//     watches pods, never PodGroups or owners: KAI pkg/podgrouper/pod_controller.go
//     SetupWithManager);
//   - it skips a pod that carries kai.scheduler/skip-podgrouper: "true", or one any owner of
//     which does (KAI pod_controller.go Reconcile with the skip checks of v0.15+, design
//     docs/developer/designs/external-podgroups/README.md "Podgrouper Behavior");
//   - it walks owner references from ownerReferences[0] by metadata with an uncached client, and
//     a Forbidden owner ends the walk (KAI pkg/podgrouper/podgrouper/podgrouper.go
//     getResourceOwners, handleGetOwnerError);
//   - for a kind without a plugin it groups the pod as KAI's default grouper does: PodGroup
//     "pg-<top owner name>-<top owner UID>", minMember 1, one owner reference to the top owner,
//     annotation kai.scheduler/top-owner-metadata, queue from kai.scheduler/queue or
//     default-queue (KAI plugins/defaultgrouper/default_grouper.go GetPodGroupMetadata). So every
//     pod it takes is in a PodGroup whose minimum it alone satisfies: the partial gang gangmap
//     must prevent;
//   - for a kind an alpha-form Karta covers that KAI's Karta hub sees (its three run.ai/karta-*
//     labels), it names and sizes the PodGroup as KAI v0.17's Karta fallback does
//     (pkg/podgrouper/podgrouper/plugins/karta/grouper.go getPodGroupMetadataAlpha and
//     calcPodGroupName: "pg-<top owner UID>[-<the pod's grouping-key values>]"; see alphaKarta);
//   - it creates the PodGroup when missing, sets minMember back to its own when it differs (KAI
//     handler.go ApplyToCluster replaces the spec), and rewrites the pod's pod-group-name
//     whenever it differs from its own result (pod_controller.go assignPodToGroupAndSubGroup).
//
// Grouped records every pod it put in a PodGroup.
type KAIPodGrouper struct {
	client client.Client

	mu      sync.Mutex
	grouped []KAIGrouping
	done    chan error
}

// KAIGrouping is one pod the stand-in put in a PodGroup, and when.
type KAIGrouping struct {
	Pod      types.NamespacedName
	PodGroup string
	At       time.Time
}

var _ reconcile.Reconciler = (*KAIPodGrouper)(nil)

// StartKAIPodGrouper runs the stand-in against cfg until ctx ends.
func StartKAIPodGrouper(ctx context.Context, cfg *rest.Config) (*KAIPodGrouper, error) {
	mgr, err := ctrl.NewManager(rest.CopyConfig(cfg), ctrl.Options{
		Scheme:     app.Scheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	uncached, err := client.New(rest.CopyConfig(cfg), client.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, err
	}
	k := &KAIPodGrouper{client: uncached, done: make(chan error, 1)}
	if err := ctrl.NewControllerManagedBy(mgr).Named("kai-pod-grouper-stand-in").For(&corev1.Pod{}).Complete(k); err != nil {
		return nil, err
	}
	go func() { k.done <- mgr.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		return nil, fmt.Errorf("KAI pod-grouper stand-in: caches did not sync")
	}
	return k, nil
}

// Grouped returns what the stand-in grouped so far.
func (k *KAIPodGrouper) Grouped() []KAIGrouping {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]KAIGrouping(nil), k.grouped...)
}

// Reconcile implements reconcile.Reconciler with KAI's steps (see the type's comment).
func (k *KAIPodGrouper) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := k.client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pod.Spec.SchedulerName != "kai-scheduler" || pod.Annotations[kaikeys.SkipPodGrouper] == "true" || len(pod.OwnerReferences) == 0 {
		return reconcile.Result{}, nil
	}
	top, skip, err := k.topOwner(ctx, pod)
	if err != nil || skip {
		return reconcile.Result{}, err
	}
	name, minMember := fmt.Sprintf("pg-%s-%s", top.GetName(), top.GetUID()), int32(1)
	kg, err := k.alphaKarta(ctx, pod, top)
	if err != nil {
		return reconcile.Result{}, err
	}
	if kg != nil {
		name, minMember = kg.name, kg.minMember
	}
	if err := k.apply(ctx, pod, top, name, minMember); err != nil {
		return reconcile.Result{}, err
	}
	if pod.Annotations[kaikeys.PodGroupName] == name {
		return reconcile.Result{}, nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, kaikeys.PodGroupName, name)
	if err := k.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	k.mu.Lock()
	k.grouped = append(k.grouped, KAIGrouping{Pod: req.NamespacedName, PodGroup: name, At: time.Now()})
	k.mu.Unlock()
	return reconcile.Result{}, nil
}

// topOwner walks the owners by metadata; skip is true when the pod or an owner says skip.
func (k *KAIPodGrouper) topOwner(ctx context.Context, pod *corev1.Pod) (*metav1.PartialObjectMetadata, bool, error) {
	var last *metav1.PartialObjectMetadata
	ref := &pod.OwnerReferences[0]
	for ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return nil, false, err
		}
		o := &metav1.PartialObjectMetadata{}
		o.SetGroupVersionKind(gv.WithKind(ref.Kind))
		if err := k.client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, o); err != nil {
			if apierrors.IsForbidden(err) && last != nil {
				return last, false, nil
			}
			return nil, false, client.IgnoreNotFound(err)
		}
		if o.Annotations[kaikeys.SkipPodGrouper] == "true" {
			return o, true, nil
		}
		last, ref = o, nil
		if refs := o.GetOwnerReferences(); len(refs) > 0 {
			ref = &refs[0]
		}
	}
	return last, false, nil
}

// apply creates the PodGroup with minMember (1 for the default grouper's one-pod PodGroup), or
// sets its minMember back to that.
func (k *KAIPodGrouper) apply(ctx context.Context, pod *corev1.Pod, top *metav1.PartialObjectMetadata, name string, minMember int32) error {
	queue := top.Labels[kaikeys.DefaultQueueLabel]
	if queue == "" {
		queue = kaikeys.DefaultQueue
	}
	gv := top.GroupVersionKind()
	pg := &v2alpha2.PodGroup{}
	err := k.client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, pg)
	if apierrors.IsNotFound(err) {
		pg = &v2alpha2.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: name,
				Annotations:     map[string]string{kaikeys.TopOwnerMetadata: fmt.Sprintf("name: %s\nuid: %s\ngroup: %s\nversion: %s\nkind: %s\n", top.Name, top.UID, gv.Group, gv.Version, gv.Kind)},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: gv.GroupVersion().String(), Kind: gv.Kind, Name: top.Name, UID: top.UID}}},
			Spec: v2alpha2.PodGroupSpec{MinMember: ptr.To(minMember), Queue: queue, SubGroups: []v2alpha2.SubGroup{}},
		}
		return client.IgnoreAlreadyExists(k.client.Create(ctx, pg))
	}
	if err != nil {
		return err
	}
	if ptr.Deref(pg.Spec.MinMember, -1) == minMember && pg.Spec.MinSubGroup == nil && len(pg.Spec.SubGroups) == 0 {
		return nil
	}
	pg.Spec.MinMember, pg.Spec.MinSubGroup, pg.Spec.SubGroups = ptr.To(minMember), nil, []v2alpha2.SubGroup{}
	return k.client.Update(ctx, pg)
}

// String renders the groupings for test messages.
func (g KAIGrouping) String() string {
	return fmt.Sprintf("%s -> %s at %s", g.Pod, g.PodGroup, g.At.Format("15:04:05.000"))
}
