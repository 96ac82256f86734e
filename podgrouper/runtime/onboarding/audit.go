package onboarding

import (
	"context"
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Event reasons of the NamespaceAuditor, on the Namespace.
const (
	// QueueMissingReason (Warning): a rule selecting the namespace takes the queue from a label
	// the namespace lacks; the rule does not onboard pods there.
	QueueMissingReason = "GangmapOnboardingQueueMissing"
	// QueueFoundReason (Normal): the namespace has the label now (or the rule changed).
	QueueFoundReason = "GangmapOnboardingQueueFound"
)

// namespaceProblems is the number of namespaces each rule is refused in.
var namespaceProblems = promauto.With(metrics.Registry).NewGaugeVec(prometheus.GaugeOpts{
	Name: "gangmap_onboarding_namespace_problems",
	Help: "Namespaces an onboarding rule selects that lack the label the rule takes the queue from (queue.fromNamespaceLabel), by rule: the rule does not onboard pods there.",
}, []string{"rule"})

// NamespaceAuditor checks the namespaces against the onboarding policy when a policy is put in
// force and whenever a namespace is added, relabelled or deleted: each namespace a rule selects
// that lacks the label the rule takes the queue from is reported once, as an error log naming
// the policy field and the namespace, a Warning Event on the Namespace and the
// gangmap_onboarding_namespace_problems gauge; a problem that goes away gets a Normal Event.
// It only reports: admission applies the same rule (Compiled.Match) and never blocks a pod.
// Namespaces are read only while the policy has a queue.fromNamespaceLabel rule (the chart grants
// the namespace RBAC exactly then).
type NamespaceAuditor struct {
	// Policy is the policy in force; Changes signals a new one (Source.Current, Source.Changes).
	Policy  func() *Compiled
	Changes <-chan struct{}
	// Namespaces lists namespaces (the manager's cached client); Informers gives the namespace
	// informer whose events trigger a check (the manager's cache). Nil Informers: policy
	// changes only.
	Namespaces client.Reader
	Informers  cache.Informers
	// Recorder records the Events on the Namespaces.
	Recorder record.EventRecorder

	reported map[string]*NamespaceProblem // by rule and namespace
	watching bool
}

var (
	_ manager.Runnable               = (*NamespaceAuditor)(nil)
	_ manager.LeaderElectionRunnable = (*NamespaceAuditor)(nil)
)

// NeedLeaderElection implements manager.LeaderElectionRunnable: one replica reports.
func (a *NamespaceAuditor) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable: it checks once, then on each policy or namespace change.
func (a *NamespaceAuditor) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("onboarding-namespaces")
	ctx = ctrl.LoggerInto(ctx, log)
	nsChanged := make(chan struct{}, 1)
	trigger := func() {
		select {
		case nsChanged <- struct{}{}:
		default:
		}
	}
	policyChanged := true
	for {
		if a.Policy().ReadsNamespaceQueues() && !a.watching && a.Informers != nil {
			if err := a.watch(ctx, trigger); err != nil {
				log.Error(err, "Watching namespaces for the onboarding policy's queue labels; checked at policy changes only")
			}
		}
		if err := a.Audit(ctx, policyChanged); err != nil {
			log.Error(err, "Checking namespaces against the onboarding policy")
		}
		policyChanged = false
		select {
		case <-ctx.Done():
			return nil
		case <-a.Changes:
			policyChanged = true
		case <-nsChanged:
		}
	}
}

// watch registers trigger on the namespace informer's events.
func (a *NamespaceAuditor) watch(ctx context.Context, trigger func()) error {
	inf, err := a.Informers.GetInformer(ctx, &corev1.Namespace{})
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { trigger() },
		UpdateFunc: func(any, any) { trigger() },
		DeleteFunc: func(any) { trigger() },
	})
	a.watching = err == nil
	return err
}

// Audit checks every namespace against the policy in force and reports what changed since the
// last check (everything again when policyChanged: a policy load reports all its problems).
func (a *NamespaceAuditor) Audit(ctx context.Context, policyChanged bool) error {
	log := ctrl.LoggerFrom(ctx)
	policy := a.Policy()
	current := map[string]*NamespaceProblem{}
	exists := map[string]bool{}
	if policy.ReadsNamespaceQueues() {
		list := &corev1.NamespaceList{}
		if err := a.Namespaces.List(ctx, list); err != nil {
			return err
		}
		for i := range list.Items {
			ns := &list.Items[i]
			exists[ns.Name] = true
			for _, p := range policy.CheckNamespace(ns.Name, ns.Labels) {
				current[p.Rule+"/"+p.Namespace] = p
			}
		}
	}
	seen := a.reported
	if policyChanged {
		seen = nil
	}
	for _, k := range slices.Sorted(maps.Keys(current)) {
		if _, ok := seen[k]; ok {
			continue
		}
		p := current[k]
		log.Error(p, "Onboarding rule refused for a namespace", "field", p.Field, "namespace", p.Namespace, "rule", p.Rule, "label", p.Label)
		a.event(p.Namespace, corev1.EventTypeWarning, QueueMissingReason, p.Error())
	}
	for _, k := range slices.Sorted(maps.Keys(a.reported)) {
		if _, still := current[k]; still {
			continue
		}
		p := a.reported[k]
		if !exists[p.Namespace] {
			continue // deleted, or no longer read (the policy reads no namespace queue now)
		}
		log.Info("Onboarding rule applies to the namespace again", "field", p.Field, "namespace", p.Namespace, "rule", p.Rule)
		a.event(p.Namespace, corev1.EventTypeNormal, QueueFoundReason, "onboarding rule "+p.Rule+" onboards pods in this namespace again (the namespace has its queue label, or the rule changed)")
	}
	a.reported = current
	namespaceProblems.Reset()
	for _, p := range current {
		namespaceProblems.WithLabelValues(p.Rule).Inc()
	}
	return nil
}

func (a *NamespaceAuditor) event(ns, typ, reason, msg string) {
	if a.Recorder == nil {
		return
	}
	a.Recorder.Event(&corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: ns}, typ, reason, msg)
}
