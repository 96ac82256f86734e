package app

import (
	"cmp"
	"context"
	"fmt"
	goruntime "runtime"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/defaultgrouper"
	"github.com/gangmap/gangmap/podgrouper/core/hub"
	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
	"github.com/gangmap/gangmap/podgrouper/core/native"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
	"github.com/gangmap/gangmap/podgrouper/runtime/bothgroupers"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
	"github.com/gangmap/gangmap/podgrouper/runtime/crdlint"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
	"github.com/gangmap/gangmap/podgrouper/runtime/groupersetup"
	"github.com/gangmap/gangmap/podgrouper/runtime/podcache"
	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
	"github.com/gangmap/gangmap/podgrouper/runtime/strays"
	gangmapwebhook "github.com/gangmap/gangmap/podgrouper/runtime/webhook"
)

// Scheme holds the types the grouper reads and writes: core Kubernetes and KAI's PodGroup.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v2alpha2.AddToScheme(s)
	return s
}

// New builds the manager with the pod controller, the admission webhook (unless --webhook-port
// is 0) and the definition sources.
func New(o *Options, cfg *rest.Config) (manager.Manager, *definitions.Registry, error) {
	table, err := o.NativeTable()
	if err != nil {
		return nil, nil, err
	}
	release, err := o.KAIRelease()
	if err != nil {
		return nil, nil, err
	}
	mgr, err := ctrl.NewManager(cfg, o.managerOptions())
	if err != nil {
		return nil, nil, err
	}
	// Events go through a correlator with smaller caches than controller-runtime's (events.go).
	if mgr, err = withEvents(mgr); err != nil {
		return nil, nil, err
	}
	registry, _, err := groupersetup.Definitions{Paths: o.DefinitionPaths, Poll: o.DefinitionsPoll, Cluster: o.ClusterDefinitions,
		Strict: o.StrictDefinitions, Catalog: true, IsNative: table.Has}.Add(mgr)
	if err != nil {
		return nil, nil, err
	}
	regroup := make(chan struct{}, 1)
	registry.OnChange(func() {
		select {
		case regroup <- struct{}{}:
		default:
		}
	})
	linter := &crdlint.Linter{Registry: registry, Reader: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper(),
		Recorder: mgr.GetEventRecorderFor("gangmap-definitions"), Elected: mgr.Elected()}
	registry.OnChange(linter.Changed)
	// A cluster or file definition is linted before it can win, not only after (the lint runs on
	// its own): a definition its CRD refuses must never regroup live workloads.
	registry.SetVetter(linter.Vet)
	if err := mgr.Add(linter); err != nil {
		return nil, nil, err
	}
	decider := newDecider(mgr, o, registry, table, release)
	r, err := newPodReconciler(mgr, o, cfg, decider, release)
	if err != nil {
		return nil, nil, err
	}
	if err := addCoexistence(mgr, o, r, registry); err != nil {
		return nil, nil, err
	}
	if err := r.SetupWithManager(mgr, o.MaxConcurrentReconciles, regroup); err != nil {
		return nil, nil, err
	}
	if err := addWebhook(mgr, o, registry, decider); err != nil {
		return nil, nil, err
	}
	if err := cmp.Or(mgr.AddHealthzCheck("ping", healthz.Ping), mgr.AddReadyzCheck("ping", healthz.Ping)); err != nil {
		return nil, nil, err
	}
	return mgr, registry, nil
}

// addWebhook registers the admission webhook on the manager's webhook server, with the
// onboarding policy and the self-signed certificate when they are on; nothing when --webhook-port
// is 0.
func addWebhook(mgr manager.Manager, o *Options, registry *definitions.Registry, decider *decide.Decider) error {
	if o.WebhookPort == 0 {
		return nil
	}
	nsSel, objSel, err := o.webhookSelectors()
	if err != nil {
		return err
	}
	m := &gangmapwebhook.PodMutator{Decider: decider, Namespaces: mgr.GetClient(),
		NamespaceSelector: nsSel, ObjectSelector: objSel, Timeout: o.WebhookTimeout, DryRun: o.DryRun}
	if err := addOnboarding(mgr, o, registry, m); err != nil {
		return err
	}
	if o.WebhookSelfSigned {
		// The certificate is issued now (the webhook server reads it at start), then renewed.
		s := &gangmapwebhook.SelfSigned{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(),
			Secret: client.ObjectKey{Namespace: o.WebhookNamespace, Name: o.WebhookSecret}, WebhookConfiguration: o.WebhookConfigName,
			DNSNames: o.webhookDNSNames(), CertDir: o.WebhookCertDir}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Ensure(ctx); err != nil {
			return fmt.Errorf("--webhook-self-signed: %w", err)
		}
		if err := mgr.Add(s); err != nil {
			return err
		}
	}
	m.Register(mgr.GetWebhookServer())
	return mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker())
}

// newPodReconciler builds the pod controller's reconciler (not set up yet) on the manager: its pod
// cache, the PodGroup owner index, the Observer (groupersetup.AddObserver) with the findings
// reporter, and the Applier's PodGroup events.
func newPodReconciler(mgr manager.Manager, o *Options, cfg *rest.Config, decider *decide.Decider, release *kairelease.Release) (*controller.PodReconciler, error) {
	// The pod controller's pods: a Record per pod of our scheduler (podcache), not typed pods.
	pods, err := podcache.New(cfg, o.SchedulerName)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(pods); err != nil {
		return nil, err
	}
	// PodGroups by owner UID (strays.OwnerIndex): the stray collector's look at a workload's
	// PodGroups, and where the findings reporter, the workload status keeper and the workload
	// metrics find the PodGroups of a planned name with a key placeholder (podgroup.ActualNames),
	// instead of listing the namespace's PodGroups for each workload.
	pgOwners, err := strays.IndexOwnerUID(context.Background(), mgr.GetCache())
	if err != nil {
		return nil, err
	}
	r := &controller.PodReconciler{
		Client:  mgr.GetClient(),
		Pods:    pods,
		Decider: decider,
		Applier: &podgroup.Applier{Client: mgr.GetClient(), NodePoolLabelKey: o.NodePoolLabelKey, QueueLabelKey: o.QueueLabelKey,
			MetadataUpdateInterval: podgroup.DefaultMetadataUpdateInterval},
		Recorder: mgr.GetEventRecorderFor(controller.Name),
		Release:  release,
		DryRun:   o.DryRun,

		WebhookServed:  o.WebhookPort != 0,
		PodGroupOwners: pgOwners,
	}
	if r.Observer, err = groupersetup.AddObserver(mgr, o.MaxWorkloadMetrics, mgr.GetClient(), &findings.Reporter{Config: o.Findings,
		Client: mgr.GetClient(), Owners: pgOwners, DryRun: o.DryRun, Pods: r, Release: release}); err != nil {
		return nil, err
	}
	// The Applier learns when the cache shows a PodGroup it created (no second POST meanwhile).
	if err := controller.WatchPodGroupCache(context.Background(), mgr.GetCache(), r.Applier); err != nil {
		return nil, err
	}
	return r, nil
}

// newDecider builds the decision shared by the pod controller and the webhook: the owner walk,
// the hub (native table, definitions, gangmap's grouper on KAI's default metadata) and the access
// checker.
func newDecider(mgr manager.Manager, o *Options, registry *definitions.Registry, table *native.Table, release *kairelease.Release) *decide.Decider {
	defaults := &defaultgrouper.Grouper{Reader: mgr.GetClient(), QueueLabelKey: o.QueueLabelKey, NodePoolLabelKey: o.NodePoolLabelKey}
	d := &decide.Decider{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		// The webhook reads top owners from the informers' stores without a deep copy
		// (Decider.DecideShared); the pod controller reads copies.
		SharedOwners: &controller.InformerOwners{Cache: mgr.GetCache()},
		Walker:       &owners.Walker{Reader: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper(), CacheTTL: ownerCacheTTL, CacheSize: o.OwnerCacheSize},
		Hub: &hub.Hub{Native: table, Registry: registry, Grouper: &workloadmap.Grouper{Registry: registry, Defaults: defaults, Recorder: mgr.GetEventRecorderFor("gangmap-definitions"), Release: release, NoRolePlacement: o.TopologySegments == "off",
			PlanCacheSize: o.PlanCacheSize, PlanMemory: o.planBuildMemory(), PlanWait: o.PlanBuildWait}},
		Access: &controller.AccessChecker{Client: mgr.GetClient(), Mapper: mgr.GetRESTMapper(), Registry: registry,
			Recorder: mgr.GetEventRecorderFor(controller.Name)},
		SchedulerName: o.SchedulerName,
	}
	// The walk reads owners of the kinds the workload informers hold from them (no GET, no copy).
	d.Walker.Shared = d.WalkOwners()
	return d
}

// managerOptions are the manager's options: the scheme, metrics, probes, leader election, the
// pod cache limited to our scheduler's pods, unstructured reads through the cache, and the
// webhook server when it is on.
func (o *Options) managerOptions() ctrl.Options {
	mopts := ctrl.Options{
		Scheme:                  Scheme(),
		Metrics:                 o.MetricsServerOptions(),
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// The process exits when the manager stops, so the Lease can be handed over at once.
		LeaderElectionReleaseOnCancel: true,
		Cache: cache.Options{
			// Every cached object but pods (workloads, PodGroups, namespaces, priority classes)
			// is kept without its managed fields, and equal subtrees of the workloads (read
			// unstructured) are stored once; see podview for what each decision reads.
			DefaultTransform: podview.NewInterner(podview.WorkloadInternerSize).Transform,
			ByObject: map[client.Object]cache.ByObject{
				// The pod controller reads pods from its own cache (podcache: a podview.Record per
				// pod). Should anything read pods through the manager's cache, only pods of our
				// scheduler are cached, as KAI's pod-grouper does, and only the webhook's view.
				&corev1.Pod{}: {Field: fields.OneTermEqualSelector("spec.schedulerName", o.SchedulerName), Transform: podview.TransformPod},
				// PodGroups: managed fields and KAI's status details dropped (podgroup.CacheTransform).
				&v2alpha2.PodGroup{}: {Transform: podgroup.CacheTransform},
			},
		},
		Client:     client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Controller: config.Controller{SkipNameValidation: ptr.To(o.SkipControllerNameValidation)},
	}
	if o.WebhookPort != 0 {
		mopts.WebhookServer = webhook.NewServer(o.WebhookServerOptions())
	}
	return mopts
}

// addCoexistence wires what keeps gangmap and KAI's pod-grouper from splitting a gang: the skip
// mark on workloads (not in dry-run, and only on a KAI release that honours the annotation,
// kairelease.Release.HonoursSkipAnnotation), the stray PodGroup collector (reports only in
// dry-run), and the notice when KAI's own Karta fallback can see a Karta of a kind gangmap groups
// (checked after each definition change).
func addCoexistence(mgr manager.Manager, o *Options, r *controller.PodReconciler, registry *definitions.Registry) error {
	both := &bothgroupers.Notifier{Registry: registry, KAIHasKartaFallback: r.Release == nil || r.Release.KartaFallback,
		Grouped:  func(gvk schema.GroupVersionKind) bool { return r.Decider.Hub.Decide(gvk) == hub.Grouped },
		Recorder: mgr.GetEventRecorderFor("gangmap-definitions")}
	registry.OnChange(func() { both.Check(ctrl.LoggerInto(context.Background(), mgr.GetLogger())) })
	if o.MarkWorkloads && !o.DryRun && r.Release.HonoursSkipAnnotation() {
		r.Owners = &ownerskip.Marker{Client: mgr.GetClient()}
	}
	if o.StrayPodGroupGrace > 0 {
		r.Strays = &strays.Collector{Client: mgr.GetClient(), Pods: r.Pods, Grace: o.StrayPodGroupGrace, DryRun: o.DryRun,
			Owned: r.PodGroupOwners.Owned, Recorder: mgr.GetEventRecorderFor(controller.Name)}
		return mgr.Add(r.Strays)
	}
	return nil
}

// webhookSelectors parses --webhook-namespace-selector and --webhook-object-selector.
func (o *Options) webhookSelectors() (ns, obj labels.Selector, err error) {
	if ns, err = labels.Parse(o.WebhookNamespaceSelector); err != nil {
		return nil, nil, fmt.Errorf("--webhook-namespace-selector: %w", err)
	}
	if obj, err = labels.Parse(o.WebhookObjectSelector); err != nil {
		return nil, nil, fmt.Errorf("--webhook-object-selector: %w", err)
	}
	return ns, obj, nil
}

// Run builds the manager and runs it until ctx ends. It expects options that passed Validate.
func Run(ctx context.Context, o *Options) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.Zap)))
	cfg, err := o.RestConfig()
	if err != nil {
		return err
	}
	logStart(ctrl.Log.WithName("setup"), o, cfg)
	o.applyMemoryLimit(ctrl.Log.WithName("setup"))
	mgr, _, err := New(o, cfg)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// logStart logs, once, the version and the options that decide what the grouper does, then a
// newer-than-known KAI release and what the release costs (kairelease.Release.Costs), so an
// operator on an older KAI reads it where they look first.
func logStart(log logr.Logger, o *Options, cfg *rest.Config) {
	webhookMode := "off"
	switch {
	case o.WebhookPort == 0:
	case o.WebhookSelfSigned:
		webhookMode = "self-signed"
	default:
		webhookMode = "cert-dir"
	}
	// append to an empty list: an unset list logs as [] rather than null.
	kv := []any{"version", version(), "go", goruntime.Version(), "apiServer", cfg.Host,
		"schedulerName", o.SchedulerName, "kaiVersion", o.KAIVersion,
		"nativeKindsAdd", append([]string{}, o.NativeKindsAdd...), "nativeKindsRemove", append([]string{}, o.NativeKindsRemove...),
		"definitions", append([]string{}, o.DefinitionPaths...), "clusterDefinitions", o.ClusterDefinitions, "strictDefinitions", o.StrictDefinitions,
		"dryRun", o.DryRun, "webhook", webhookMode}
	if o.WebhookPort != 0 {
		kv = append(kv, "webhookPort", o.WebhookPort, "webhookCertDir", o.WebhookCertDir)
		if o.WebhookSelfSigned {
			kv = append(kv, "webhookSecret", o.WebhookNamespace+"/"+o.WebhookSecret)
		}
	}
	kv = append(kv, "metricsAddr", o.MetricsAddr, "metricsSecure", o.MetricsSecure, "tlsMinVersion", o.TLSMinVersion, "http2", o.EnableHTTP2)
	kv = append(kv, "leaderElect", o.LeaderElect)
	if o.LeaderElect {
		kv = append(kv, "leaderElectionID", o.LeaderElectionID, "leaderElectionNamespace", o.LeaderElectionNamespace)
	}
	kv = append(kv, "maxConcurrentReconciles", o.MaxConcurrentReconciles, "qps", o.QPS, "burst", o.Burst)
	rel, err := o.KAIRelease()
	if err == nil {
		kv = append(kv, "kaiReleaseLine", rel.Line, "kaiSkipAnnotation", rel.SkipAnnotation, "kaiMinSubGroup", rel.MinSubGroup)
	}
	log.Info("Starting gangmap-grouper", kv...)
	if err != nil {
		return
	}
	if rel.Warning != "" {
		log.Info("Warning: "+rel.Warning, "kaiVersion", rel.Requested, "treatedAs", rel.Line)
	}
	for _, c := range rel.Costs() {
		log.Info("KAI release limit: "+c, "kaiVersion", rel.Requested)
	}
}

// ownerCacheTTL is how long an owner read during the owner walk is reused: the pods of one Job
// or StatefulSet then cost one read of each owner instead of one per pod and reconcile.
const ownerCacheTTL = 30 * time.Second
