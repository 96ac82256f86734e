// Package app builds and runs gangmap's grouper: options (flags), the manager and its
// runnables. main only calls Run.
package app

import (
	"flag"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
	"github.com/gangmap/gangmap/podgrouper/core/native"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
	"github.com/gangmap/gangmap/podgrouper/runtime/workloadmetrics"
)

// Options are the grouper's settings, one flag each: AddFlags says what each means and its
// default.
type Options struct {
	SchedulerName, KAIVersion, TopologySegments        string
	NativeKindsAdd, NativeKindsRemove, DefinitionPaths []string
	DefinitionsPoll                                    time.Duration
	ClusterDefinitions, StrictDefinitions              bool
	OnboardingPolicy                                   string
	QueueLabelKey, NodePoolLabelKey                    string
	DryRun, MarkWorkloads                              bool
	StrayPodGroupGrace                                 time.Duration
	MaxConcurrentReconciles, MaxWorkloadMetrics        int
	QPS                                                float32
	OwnerCacheSize, PlanCacheSize                      int
	PlanBuildMemory                                    string
	PlanBuildWait                                      time.Duration
	PprofAddr, MemoryLimit                             string
	Burst                                              int
	MetricsAddr                                        string
	MetricsSecure                                      bool
	MetricsCertDir                                     string
	EnableHTTP2                                        bool
	TLSMinVersion, ProbeAddr                           string
	LeaderElect                                        bool
	LeaderElectionID, LeaderElectionNamespace          string
	Kubeconfig                                         string
	Zap                                                zap.Options
	// Findings holds the grace periods of the observed-vs-planned findings (package findings).
	Findings findings.Config

	WebhookPort                                     int
	WebhookHost, WebhookCertDir                     string
	WebhookNamespaceSelector, WebhookObjectSelector string
	WebhookTimeout                                  time.Duration
	WebhookSelfSigned                               bool
	WebhookConfigName, WebhookSecret                string
	WebhookService, WebhookNamespace                string
	WebhookCertDNSNames                             []string

	// SkipControllerNameValidation lets several groupers run in one process (tests); no flag.
	SkipControllerNameValidation bool
}

// DefaultOptions returns the defaults the flags show in --help (AddFlags sets them).
func DefaultOptions() *Options {
	o := &Options{}
	o.AddFlags(pflag.NewFlagSet("defaults", pflag.ContinueOnError))
	return o
}

// AddFlags registers every option on fs and sets it to its default. Every flag's help ends with
// its default: pflag adds "(default X)" for non-zero defaults, and the help text says it for the
// others.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.SchedulerName, "scheduler-name", "kai-scheduler", "Group only pods whose spec.schedulerName is this (KAI's scheduler name).")
	fs.StringVar(&o.KAIVersion, "kai-version", native.DefaultRelease, "KAI release installed beside gangmap (a line such as v0.14 or a tag such as v0.14.7): its native-plugin table decides which kinds KAI groups itself (native wins), and its PodGroup CRD and skip-annotation support what gangmap writes; known: "+strings.Join(kairelease.Known(), ", ")+" (a newer release is treated as "+kairelease.Latest+", with a warning).")
	fs.StringVar(&o.TopologySegments, "topology-segments", "auto", "Segments (kai.scheduler/segment-size) and per-role topology constraints from pod templates: auto writes them where --kai-version's PodGroup CRD has the fields (v0.15+) and notes it in each plan otherwise; on refuses to start on an older release; off never writes them (the PodGroup's own topology constraint is always written).")
	fs.StringSliceVar(&o.NativeKindsAdd, "native-kinds-add", nil, "Extra kinds KAI groups natively, as group/version/Kind (core for the core group, * for any version). (default none)")
	fs.StringSliceVar(&o.NativeKindsRemove, "native-kinds-remove", nil, "Kinds to drop from the native table, as group/version/Kind (e.g. jobset.x-k8s.io/v1alpha2/JobSet on a KAI without the JobSet plugin; g/*/K drops every version). A kind that is not in the table (--kai-version's, plus --native-kinds-add) is refused at start with the list of what the table has. (default none)")
	fs.StringSliceVar(&o.DefinitionPaths, "definitions", nil, "Definition files or directories (e.g. a mounted ConfigMap), polled for changes; each must exist at start. (default none: cluster Kartas and the built-in catalog only)")
	fs.DurationVar(&o.DefinitionsPoll, "definitions-poll", 10*time.Second, "How often definition files are checked for changes; must be positive.")
	fs.BoolVar(&o.ClusterDefinitions, "cluster-definitions", true, "Watch Karta (run.ai/v1alpha1) objects in the cluster; they win over files and the built-in catalog.")
	fs.StringVar(&o.OnboardingPolicy, "onboarding-policy", "", "Onboarding policy file (e.g. a mounted ConfigMap key), polled like --definitions: the webhook gives pods of the kinds it names the KAI scheduler name, a queue label and labels at creation. Needs the webhook. (default none: off)")
	fs.BoolVar(&o.StrictDefinitions, "strict-definitions", true, "Reject definitions (files and cluster Kartas) with unknown fields: a misspelt field such as replicaPath would otherwise be left out and silently change the gang. --strict-definitions=false accepts them with a warning, for definitions written for a newer gangmap.")
	fs.StringVar(&o.QueueLabelKey, "queue-label-key", kaikeys.DefaultQueueLabel, "Label on the workload or pod naming the KAI queue (KAI's --queue-label-key).")
	fs.StringVar(&o.NodePoolLabelKey, "nodepool-label-key", kaikeys.DefaultNodePoolLabel, "Pod label naming the node pool (KAI's --nodepool-label-key).")
	fs.BoolVar(&o.MarkWorkloads, "mark-workloads", true, "Put KAI's skip annotation (kai.scheduler/skip-podgrouper) on each workload gangmap groups, so KAI's pod-grouper (v0.15+, with read access to the kind) never groups its later pods, also while gangmap is down; needs patch on the workload kinds.")
	fs.DurationVar(&o.StrayPodGroupGrace, "stray-podgroup-grace", 30*time.Second, "Delete a workload's PodGroup written by gangmap or KAI's pod-grouper that is not in the workload's plan and that no pod has named for this long (with --dry-run: report it); 0 never deletes. Needs delete on podgroups.")
	fs.BoolVar(&o.DryRun, "dry-run", false, "Shadow mode: decide and report through Events, logs and metrics, write nothing. (default false)")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", 10, "Pods grouped in parallel; at least 1.")
	fs.IntVar(&o.OwnerCacheSize, "owner-cache-size", owners.DefaultCacheSize, "Most owners the owner walk remembers (each ~0.7 KB with its index entry) for 30s: the owners it reads from the API server (Jobs of JobSets, ReplicaSets, StatefulSets, owners of native kinds); owners of kinds gangmap groups are read from the workload informers instead. Keep it above the number of such owners of live pods; at least 1.")
	fs.IntVar(&o.PlanCacheSize, "plan-cache-size", workloadmap.DefaultPlanCacheSize, "Most gang plans cached, one per workload (about 2.5 KB each for a workload of one PodGroup and a few roles; also bounded by their total size): each pod admitted or reconciled reads its workload's plan, and a plan not cached is built again (about 0.3 ms of CPU for a catalog definition); gangmap_plan_cache_lookups_total counts hits and misses. A workload's pods come in bursts, so the cache need not hold every live workload; at least 1.")
	fs.IntVar(&o.MaxWorkloadMetrics, "max-workload-metrics", workloadmetrics.DefaultMaxWorkloads, "Most workloads with gangmap_workload_* series (status, GPUs per role, pods per phase); past it a workload gets none and gangmap_workload_metrics_dropped_total counts it; 0 turns the workload series off.")
	fs.Float32Var(&o.QPS, "qps", 50, "Client queries per second to the API server (the Event sink has a bucket of the same size of its own). The grouper makes about 0.4 requests per pod with its webhook and 1.4 without (one PATCH per pod), so the default keeps up with 100+ pods created per second through the webhook; raise it (e.g. 1000 with --burst 2000) for large installs without the webhook, as the API server's priority and fairness still shares its capacity fairly between clients. A negative value turns client-side rate limiting off; 0 is refused (client-go would silently use 5).")
	fs.IntVar(&o.Burst, "burst", 300, "Client burst to the API server (requests at once above --qps); at least 1 while --qps is positive.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8443", "Prometheus metrics address (host:port); 0 disables.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", true, "Serve metrics over HTTPS, each request authenticated by a TokenReview and authorized by a SubjectAccessReview (get on the non-resource URL /metrics; grant it with the chart's metrics-reader ClusterRole). false: plain HTTP without authentication, for local use only.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "Directory with the metrics server's tls.crt and tls.key, reloaded when they change. (default none: a self-signed certificate generated at start)")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", false, "Let the webhook and metrics servers negotiate HTTP/2. Off, they speak HTTP/1.1 only, out of reach of the HTTP/2 Rapid Reset and stream attacks (CVE-2023-44487, CVE-2023-39325). (default false)")
	fs.StringVar(&o.TLSMinVersion, "tls-min-version", "1.3", "Lowest TLS version the webhook and metrics servers accept: 1.2 or 1.3 (the API server and Prometheus speak 1.3).")
	fs.StringVar(&o.PlanBuildMemory, "plan-build-memory", "192Mi", "Most memory the gang plan builds running at once may hold (a quantity): each build's share is its expressions' budget (32 MiB produced per evaluation) plus three times its workload object's size, so any number of workloads built at once, hostile ones included, hold at most this; a build that waits longer than --plan-build-wait for its share is refused (a PlanBuildRefused Event on the workload; its pods are grouped at the next try). gangmap_plan_build_memory_bytes shows what is held. At least 64Mi.")
	fs.DurationVar(&o.PlanBuildWait, "plan-build-wait", workloadmap.DefaultPlanWait, "How long a plan build waits for its share of --plan-build-memory before it is refused (gangmap_plan_builds_refused_total counts them). The build is shared by the webhook and the controller: a webhook call stops waiting at --webhook-timeout and admits the pod unchanged, the controller groups it when the build is done.")
	fs.StringVar(&o.MemoryLimit, "memory-limit", "", "Soft limit of the grouper's Go memory (a quantity such as 176Mi; 0: none): the garbage collector runs more often near it instead of letting the resident set grow to twice the live heap. (default: $GOMEMLIMIT if set, else the container's memory limit read from its cgroup less 80Mi for the binary's mapped pages, which Go's limit does not count, and the soft limit's overshoot (at least half of it), else none)")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "", "Address (host:port) serving Go's net/http/pprof profiles (heap, CPU), unauthenticated: bind it to localhost or leave it off. (default none: off)")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "Health (/healthz) and readiness (/readyz) probe address (host:port); 0 disables.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "Elect a leader so that only one replica writes. (default false)")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", "gangmap-grouper.gangmap.io", "Name of the leader election Lease.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the Lease. (default: the pod's namespace, read in-cluster; required out of a cluster with --leader-elect)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Kubeconfig file; used before anything else. (default none: as controller-runtime's config.GetConfig, the cluster then comes from $KUBECONFIG if set, its files merged and the in-cluster config not tried; else the in-cluster config; else ~/.kube/config)")
	fs.IntVar(&o.WebhookPort, "webhook-port", 9443, "Port of the mutating admission webhook on Pod CREATE (TLS); 0 disables the webhook (the controller then labels pods after creation, racing KAI's pod-grouper).")
	fs.StringVar(&o.WebhookHost, "webhook-host", "", "Address the webhook server listens on. (default: empty, all addresses)")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory with the webhook's tls.crt and tls.key (cert-manager or a mounted Secret), reloaded when they change; without --webhook-self-signed they must be there at start.")
	fs.StringVar(&o.WebhookNamespaceSelector, "webhook-namespace-selector", "", "Label selector on namespaces whose pods the webhook mutates; mirror it in the MutatingWebhookConfiguration's namespaceSelector. (default: empty, all namespaces)")
	fs.StringVar(&o.WebhookObjectSelector, "webhook-object-selector", "", "Label selector on pods the webhook mutates; mirror it in the MutatingWebhookConfiguration's objectSelector. (default: empty, all pods)")
	fs.DurationVar(&o.WebhookTimeout, "webhook-timeout", 5*time.Second, "Longest time one admission decision may take, above 0 and at most 30s; past it the pod is admitted unchanged and the controller groups it. Keep it below the configuration's timeoutSeconds.")
	fs.BoolVar(&o.WebhookSelfSigned, "webhook-self-signed", false, "Issue and renew the webhook certificate in-process (CA and serving certificate in --webhook-secret, shared by replicas), write it into --webhook-cert-dir and set the CA as caBundle of --webhook-configuration-name. Off: cert-manager or a mounted Secret provides the certificate. (default false)")
	fs.StringVar(&o.WebhookConfigName, "webhook-configuration-name", "gangmap-grouper", "MutatingWebhookConfiguration whose caBundle --webhook-self-signed keeps.")
	fs.StringVar(&o.WebhookSecret, "webhook-secret", "gangmap-grouper-webhook-cert", "Secret (in --webhook-namespace) holding the self-signed CA and serving certificate.")
	fs.StringVar(&o.WebhookService, "webhook-service", "gangmap-grouper-webhook", "Service in front of the webhook; the self-signed certificate is issued for its DNS names.")
	fs.StringVar(&o.WebhookNamespace, "webhook-namespace", "gangmap-system", "Namespace of the webhook Service and certificate Secret.")
	fs.StringSliceVar(&o.WebhookCertDNSNames, "webhook-cert-dns-names", nil, "DNS names of the self-signed serving certificate. (default: the Service's <svc>, <svc>.<ns>, <svc>.<ns>.svc, <svc>.<ns>.svc.cluster.local)")
	fs.DurationVar(&o.Findings.MoreThanPlannedGrace, "findings-more-than-planned-grace", findings.DefaultMoreThanPlannedGrace, "How long a role may have more live pods than its definition plans before gangmap reports MoreThanPlanned (scaling down passes through such states); must be positive.")
	fs.DurationVar(&o.Findings.GangUnsatisfiableGrace, "findings-gang-unsatisfiable-grace", findings.DefaultGangUnsatisfiableGrace, "How long a role the gang requires may lack pods, with none being created, while other roles' pods exist, before gangmap reports GangUnsatisfiable; must be positive.")
	fs.DurationVar(&o.Findings.ResendInterval, "findings-event-interval", findings.DefaultResendInterval, "Least time between two identical findings Warning Events on one workload or Karta; must be positive.")
	zfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.Zap.BindFlags(zfs)
	fs.AddGoFlagSet(zfs)
	// controller-runtime's own help for these shows no defaults (and says epoch for the time
	// encoding, while zap.Options uses RFC 3339): say what they are.
	for name, usage := range map[string]string{
		"zap-devel":            "Development logging: console encoder, debug level, stack traces from warn. (default false: JSON encoder, info level, stack traces from error)",
		"zap-encoder":          "Log encoding: json or console. (default json; console with --zap-devel)",
		"zap-log-level":        "Log verbosity: debug, info, error, panic, or an integer above 0 for more detail. (default info; debug with --zap-devel)",
		"zap-stacktrace-level": "Level from which log entries carry a stack trace: info, error or panic. (default error; warn with --zap-devel)",
		"zap-time-encoding":    "Log time format: epoch, millis, nano, iso8601, rfc3339 or rfc3339nano. (default rfc3339)",
	} {
		if f := fs.Lookup(name); f != nil {
			f.Usage = usage
		}
	}
}

// KAIRelease is the KAI release --kai-version names (see kairelease.Parse).
func (o *Options) KAIRelease() (*kairelease.Release, error) {
	return kairelease.Parse(o.KAIVersion)
}

// webhookDNSNames are the self-signed serving certificate's names.
func (o *Options) webhookDNSNames() []string {
	if len(o.WebhookCertDNSNames) > 0 {
		return o.WebhookCertDNSNames
	}
	svc, ns := o.WebhookService, o.WebhookNamespace
	return []string{svc, svc + "." + ns, svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"}
}

// NativeTable is the native-kind table the options select (nativeTable); the error is the first
// problem Validate would report about --kai-version and the native kinds.
func (o *Options) NativeTable() (*native.Table, error) {
	var p problems
	if t := o.nativeTable(&p); len(p) == 0 {
		return t, nil
	}
	return nil, p[0]
}
