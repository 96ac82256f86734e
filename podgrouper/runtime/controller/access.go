package controller

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
)

// ReasonRBACMissing is the Event reason on a definition whose kind gangmap may not read.
const ReasonRBACMissing = "GangmapRBACMissing"

// AccessChecker checks, once per kind, that gangmap may get, list and watch the kind
// (SelfSubjectAccessReviews), and reports a kind it may not: a Warning Event on the definition
// when it is a Karta in the cluster, an error log, and gangmap_rbac_missing_total{kind}. Without
// this check a read through the cache would block (an informer that cannot list never syncs) and
// gangmap would group nothing without saying why.
type AccessChecker struct {
	// Client creates SelfSubjectAccessReviews.
	Client client.Client
	// Mapper gives a kind's resource name.
	Mapper meta.RESTMapper
	// Registry finds the definition of a kind, to put the Event on it.
	Registry *definitions.Registry
	// Recorder emits the Events; nil emits none.
	Recorder record.EventRecorder
	// Retry is how long a denied kind stays denied before it is checked again (0: 1m).
	Retry time.Duration

	mu sync.Mutex
	// checked holds each kind's last check: err nil (allowed, for good) or the denial (until
	// Retry has passed).
	checked map[schema.GroupVersionKind]accessCheck
}

var _ decide.AccessChecker = (*AccessChecker)(nil)

type accessCheck struct {
	at  time.Time
	err error
}

// verbs are what the grouper needs on each defined kind: get to walk owners, list and watch for
// the cache that reads top owners and for the regrouping watch.
var verbs = []string{"get", "list", "watch"}

// Check returns nil when gangmap may get, list and watch gvk, else an error naming the missing
// verbs (reported once per Retry). A failure to ask (e.g. SelfSubjectAccessReviews not allowed)
// is logged and treated as allowed: the check is a guard, not an authority.
func (a *AccessChecker) Check(ctx context.Context, gvk schema.GroupVersionKind) error {
	a.mu.Lock()
	last, ok := a.checked[gvk]
	a.mu.Unlock()
	if ok && (last.err == nil || time.Since(last.at) < cmp.Or(a.Retry, time.Minute)) {
		return last.err
	}

	log := ctrl.LoggerFrom(ctx).WithValues("kind", gvk.String())
	mapping, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s: %w", gvk, err)
	}
	var missing []string
	for _, verb := range verbs {
		ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: gvk.Group, Version: gvk.Version, Resource: mapping.Resource.Resource},
		}}
		if err := a.Client.Create(ctx, ssar); err != nil {
			log.V(1).Info("Cannot check access to a kind; assuming it is granted", "verb", verb, "error", err.Error())
			continue
		}
		if !ssar.Status.Allowed {
			missing = append(missing, verb)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var denied error
	if len(missing) > 0 {
		denied = fmt.Errorf("gangmap may not %s %s: grant them to the grouper (ClusterRole) for gangmap to group this kind", strings.Join(missing, ", "), mapping.Resource.GroupResource())
		a.report(ctx, gvk, denied)
	}
	if a.checked == nil {
		a.checked = map[schema.GroupVersionKind]accessCheck{}
	}
	a.checked[gvk] = accessCheck{at: time.Now(), err: denied}
	return denied
}

// ReportForbidden reports that reading an object of gvk was Forbidden (verb is what was tried).
func (a *AccessChecker) ReportForbidden(ctx context.Context, gvk schema.GroupVersionKind, verb string, err error) {
	a.report(ctx, gvk, fmt.Errorf("gangmap may not %s %s: %w", verb, gvk.GroupKind(), err))
}

func (a *AccessChecker) report(ctx context.Context, gvk schema.GroupVersionKind, err error) {
	rbacMissing.WithLabelValues(gvk.GroupKind().String()).Inc()
	ctrl.LoggerFrom(ctx).Error(err, "Gangmap may not read a kind it groups; its pods are not grouped", "kind", gvk.String())
	if a.Recorder == nil || a.Registry == nil {
		return
	}
	if karta := findings.DefinitionOf(a.Registry.Lookup(gvk)).Karta(); karta != nil {
		a.Recorder.Event(karta, corev1.EventTypeWarning, ReasonRBACMissing, err.Error())
	}
}
