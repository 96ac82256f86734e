package charttest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/native"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
	"github.com/gangmap/gangmap/podgrouper/runtime/webhook"
)

// perm is one permission: a verb on a group's resource, optionally limited to one name.
type perm struct{ group, resource, verb, name string }

func (p perm) String() string {
	s := fmt.Sprintf("%s %s.%s", p.verb, p.resource, p.group)
	if p.group == "" {
		s = fmt.Sprintf("%s %s", p.verb, p.resource)
	}
	if p.name != "" {
		s += " (" + p.name + ")"
	}
	return s
}

type permSet map[perm]bool

func (s permSet) add(group, resource string, verbs ...string) {
	for _, v := range verbs {
		s[perm{group: group, resource: resource, verb: v}] = true
	}
}

func (s permSet) sorted() []string {
	out := make([]string, 0, len(s))
	for p := range s {
		out = append(out, p.String())
	}
	sort.Strings(out)
	return out
}

// permsOf flattens RBAC rules into permissions.
func permsOf(rules []rbacv1.PolicyRule) permSet {
	s := permSet{}
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					for _, n := range names {
						s[perm{group: g, resource: res, verb: v, name: n}] = true
					}
				}
			}
		}
	}
	return s
}

// diffPerms fails the test with what is missing and what is extra.
func diffPerms(t *testing.T, what string, got, want permSet) {
	t.Helper()
	var missing, extra []string
	for p := range want {
		if !got[p] {
			missing = append(missing, p.String())
		}
	}
	for p := range got {
		if !want[p] {
			extra = append(extra, p.String())
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra) > 0 {
		t.Errorf("%s: the rendered rules differ from what the grouper's code uses\n  missing (the grouper would be Forbidden): %v\n  extra (not least privilege): %v", what, missing, extra)
	}
}

var (
	applierOnce  sync.Once
	applierVerbs []string
	applierErr   error
)

// recorder is a fake API server (controller-runtime's fake client) that records every call as
// a permission: verb, group, resource (subresources as "resource/sub") and object name.
type recorder struct {
	client.WithWatch
	calls permSet
	// failUpdate, when set, makes the next Update fail with it.
	failUpdate error
	errs       []string
}

func newRecorder(objs ...client.Object) *recorder {
	scheme := app.Scheme()
	r := &recorder{calls: permSet{}}
	record := func(verb string, obj runtime.Object, sub string) {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			r.errs = append(r.errs, fmt.Sprintf("%s %T: %v", verb, obj, err))
			return
		}
		res := strings.ToLower(strings.TrimSuffix(gvk.Kind, "List")) + "s"
		if sub != "" {
			res += "/" + sub // a subresource is a resource of its own for RBAC
		}
		name := ""
		if o, ok := obj.(client.Object); ok {
			name = o.GetName()
		}
		r.calls[perm{group: gvk.Group, resource: res, verb: verb, name: name}] = true
	}
	funcs := interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			obj.SetName(key.Name)
			record("get", obj, "")
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			record("list", list, "")
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			record("create", obj, "")
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			record("update", obj, "")
			if err := r.failUpdate; err != nil {
				r.failUpdate = nil
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			record("patch", obj, "")
			return c.Patch(ctx, obj, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			r.errs = append(r.errs, "server-side apply (a patch): extend this recorder")
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			record("delete", obj, "")
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			record("deletecollection", obj, "")
			return c.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceGet: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceGetOption) error {
			record("get", obj, sub)
			return c.SubResource(sub).Get(ctx, obj, subObj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			record("create", obj, sub)
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			record("update", obj, sub)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			record("patch", obj, sub)
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}
	r.WithWatch = fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v2alpha2.PodGroup{}).
		WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
	return r
}

// podGroupWriteVerbs returns the verbs podgroup.Applier uses on PodGroups, found by running it
// against a fake API server that records every call: a PodGroup created, applied again unchanged,
// updated (gang size, labels), and a write that meets a Conflict. Reads count as get; the
// grouper's client reads PodGroups through an informer, which lists and watches.
func podGroupWriteVerbs(t *testing.T) []string {
	t.Helper()
	applierOnce.Do(func() { applierVerbs, applierErr = recordApplierVerbs() })
	if applierErr != nil {
		t.Fatal(applierErr)
	}
	return applierVerbs
}

func recordApplierVerbs() ([]string, error) {
	rec := newRecorder()
	a := &podgroup.Applier{Client: rec, NodePoolLabelKey: kaikeys.DefaultNodePoolLabel, QueueLabelKey: kaikeys.DefaultQueueLabel}
	md := &podgroup.Metadata{
		Namespace: "ns", Name: "pg-uid-1-customjob", Queue: "team-a", PriorityClassName: "train", MinAvailable: 3,
		Labels:      map[string]string{kaikeys.DefaultQueueLabel: "team-a"},
		Annotations: map[string]string{kaikeys.GPUs: "5"},
		Owner:       metav1.OwnerReference{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: "train", UID: "uid-1"},
	}
	ctx := context.Background()
	steps := []func(){
		func() {},                             // created
		func() {},                             // unchanged
		func() { md.MinAvailable = 4 },        // gang resized: updated
		func() { md.Labels["app"] = "train" }, // labels changed: updated
		func() { // a conflicting writer
			md.MinAvailable = 5
			rec.failUpdate = apierrors.NewConflict(schema.GroupResource{Group: v2alpha2.SchemeGroupVersion.Group, Resource: "podgroups"}, md.Name, fmt.Errorf("changed"))
		},
	}
	for i, step := range steps {
		step()
		if _, err := a.Apply(ctx, md); err != nil && !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("podgroup.Applier step %d: %w", i, err)
		}
	}
	if len(rec.errs) > 0 {
		return nil, fmt.Errorf("podgroup.Applier: %v", rec.errs)
	}
	verbs := map[string]bool{}
	for p := range rec.calls {
		if p.group != v2alpha2.SchemeGroupVersion.Group || !strings.HasPrefix(p.resource, "podgroups") {
			return nil, fmt.Errorf("podgroup.Applier touched %s, not a PodGroup: grant it in the chart and extend this test", p)
		}
		v := p.verb
		if sub, ok := strings.CutPrefix(p.resource, "podgroups/"); ok {
			v += " " + sub
		}
		verbs[v] = true
	}
	var out []string
	for v := range verbs {
		out = append(out, v)
	}
	sort.Strings(out)
	return out, nil
}

// selfSignedPerms returns the calls the grouper's self-signed webhook certificate
// (webhook.SelfSigned, --webhook-self-signed) makes with the rendering's flags, on a cluster
// holding what the chart installs (its empty certificate Secret and its
// MutatingWebhookConfiguration): issuing the certificates, the steady state, and a renewal.
func selfSignedPerms(t *testing.T, r *rendering) permSet {
	t.Helper()
	o := grouperOptions(t, r)
	var objs []client.Object
	if u := r.find("Secret", o.WebhookSecret); u != nil {
		objs = append(objs, decodeStrict[corev1.Secret](t, u))
	}
	if u := r.find("MutatingWebhookConfiguration", o.WebhookConfigName); u != nil {
		objs = append(objs, decodeStrict[admissionregistrationv1.MutatingWebhookConfiguration](t, u))
	}
	rec := newRecorder(objs...)
	now := time.Now()
	s := &webhook.SelfSigned{Reader: rec, Writer: rec, Secret: client.ObjectKey{Namespace: o.WebhookNamespace, Name: o.WebhookSecret},
		WebhookConfiguration: o.WebhookConfigName, DNSNames: []string{o.WebhookService + "." + o.WebhookNamespace + ".svc"},
		CertDir: t.TempDir(), Now: func() time.Time { return now }}
	ctx := context.Background()
	for i, at := range []time.Time{now, now, now.Add(300 * 24 * time.Hour), now.Add(9 * 365 * 24 * time.Hour)} {
		now = at
		if err := s.Ensure(ctx); err != nil {
			t.Fatalf("webhook.SelfSigned.Ensure (step %d) on what the chart installs: %v", i, err)
		}
	}
	if len(rec.errs) > 0 {
		t.Fatal(rec.errs)
	}
	return rec.calls
}

// catalogWorkloadResources is the default of workloadKinds derived from the code: the built-in
// catalog's root kinds that KAI v0.17 does not group natively, each as its RBAC resource. A kind
// added to the catalog (or dropped from the native table) fails here until it is in resourceOf
// and in the chart's workloadKinds.
func catalogWorkloadResources(t *testing.T) (map[schema.GroupResource]schema.GroupVersionKind, []schema.GroupVersionKind) {
	t.Helper()
	// The plural resource of each non-native catalog kind (the Karta format does not carry it).
	resourceOf := map[schema.GroupKind]string{
		{Group: "serving.kserve.io", Kind: "InferenceService"}:         "inferenceservices",
		{Group: "serving.kserve.io", Kind: "LLMInferenceService"}:      "llminferenceservices",
		{Group: "apps.nvidia.com", Kind: "NIMService"}:                 "nimservices",
		{Group: "milvus.io", Kind: "Milvus"}:                           "milvuses",
		{Group: "workload.codeflare.dev", Kind: "AppWrapper"}:          "appwrappers",
		{Group: "batch.volcano.sh", Kind: "Job"}:                       "jobs",
		{Group: "sparkoperator.k8s.io", Kind: "SparkApplication"}:      "sparkapplications",
		{Group: "disaggregatedset.x-k8s.io", Kind: "DisaggregatedSet"}: "disaggregatedsets",
		{Group: "sparkoperator.k8s.io", Kind: "SparkConnect"}:          "sparkconnects",
		{Group: "kubeflow.org", Kind: "PaddleJob"}:                     "paddlejobs",
	}
	ls, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	table := native.DefaultTable()
	out := map[schema.GroupResource]schema.GroupVersionKind{}
	var children []schema.GroupVersionKind
	for _, l := range ls {
		sd := l.Karta.Spec.StructureDefinition
		gvk := sd.RootComponent.Kind.GVK()
		if table.Has(gvk) {
			continue
		}
		res, ok := resourceOf[gvk.GroupKind()]
		if !ok {
			t.Errorf("catalog kind %s (%s) is not native in KAI %s: add its resource to resourceOf here and to workloadKinds in deploy/helm/gangmap/values.yaml", gvk, l.Origin, native.DefaultRelease)
			continue
		}
		out[schema.GroupResource{Group: gvk.Group, Resource: res}] = gvk
		for _, c := range sd.ChildComponents {
			if c.Kind != nil {
				children = append(children, c.Kind.GVK())
			}
		}
		for _, k := range sd.AdditionalChildKinds {
			children = append(children, k.GVK())
		}
	}
	return out, children
}

// defaultOwnerKinds are the intermediate owners between a default workload kind's pods and the
// workload: the owner walk must `get` each (see ownerKinds in values.yaml). Each names the catalog
// kinds that need it; the test checks those are default workload kinds, so an owner kind no
// longer needed is noticed.
var defaultOwnerKinds = []struct {
	group, resource string
	neededBy        []string // catalog kinds (Kind.group)
}{
	{"apps", "deployments", []string{"InferenceService.serving.kserve.io", "LLMInferenceService.serving.kserve.io", "NIMService.apps.nvidia.com", "Milvus.milvus.io", "AppWrapper.workload.codeflare.dev"}},
	{"apps", "replicasets", []string{"InferenceService.serving.kserve.io", "LLMInferenceService.serving.kserve.io", "NIMService.apps.nvidia.com", "Milvus.milvus.io", "AppWrapper.workload.codeflare.dev"}},
	{"apps", "statefulsets", []string{"LLMInferenceService.serving.kserve.io", "NIMService.apps.nvidia.com", "AppWrapper.workload.codeflare.dev"}},
	{"batch", "jobs", []string{"AppWrapper.workload.codeflare.dev"}},
	{"leaderworkerset.x-k8s.io", "leaderworkersets", []string{"LLMInferenceService.serving.kserve.io", "NIMService.apps.nvidia.com"}},
	{"jobset.x-k8s.io", "jobsets", []string{"AppWrapper.workload.codeflare.dev"}},
	{"kubeflow.org", "pytorchjobs", []string{"AppWrapper.workload.codeflare.dev"}},
	{"ray.io", "rayclusters", []string{"AppWrapper.workload.codeflare.dev"}},
	{"ray.io", "rayjobs", []string{"AppWrapper.workload.codeflare.dev"}},
	{"serving.knative.dev", "services", []string{"InferenceService.serving.kserve.io", "NIMService.apps.nvidia.com"}},
	{"serving.knative.dev", "configurations", []string{"InferenceService.serving.kserve.io", "NIMService.apps.nvidia.com"}},
	{"serving.knative.dev", "revisions", []string{"InferenceService.serving.kserve.io", "NIMService.apps.nvidia.com"}},
}

// Resources built-in controllers put between a component's objects and the pods (the owner walk
// passes through them).
var builtinChains = map[schema.GroupKind][]schema.GroupResource{
	{Group: "apps", Kind: "Deployment"}:                          {{Group: "apps", Resource: "deployments"}, {Group: "apps", Resource: "replicasets"}},
	{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}: {{Group: "leaderworkerset.x-k8s.io", Resource: "leaderworkersets"}, {Group: "apps", Resource: "statefulsets"}},
	{Group: "", Kind: "Pod"}:                                     {{Group: "", Resource: "pods"}},
	{Group: "apps", Kind: "StatefulSet"}:                         {{Group: "apps", Resource: "statefulsets"}},
	{Group: "batch", Kind: "Job"}:                                {{Group: "batch", Resource: "jobs"}},
	{Group: "serving.knative.dev", Kind: "Service"}:              {{Group: "serving.knative.dev", Resource: "services"}, {Group: "serving.knative.dev", Resource: "configurations"}, {Group: "serving.knative.dev", Resource: "revisions"}},
	{Group: "serving.kserve.io", Kind: "InferenceService"}:       {{Group: "serving.kserve.io", Resource: "inferenceservices"}},
	{Group: "jobset.x-k8s.io", Kind: "JobSet"}:                   {{Group: "jobset.x-k8s.io", Resource: "jobsets"}, {Group: "batch", Resource: "jobs"}},
	{Group: "kubeflow.org", Kind: "PyTorchJob"}:                  {{Group: "kubeflow.org", Resource: "pytorchjobs"}},
	{Group: "ray.io", Kind: "RayCluster"}:                        {{Group: "ray.io", Resource: "rayclusters"}},
	{Group: "ray.io", Kind: "RayJob"}:                            {{Group: "ray.io", Resource: "rayjobs"}, {Group: "ray.io", Resource: "rayclusters"}},
}

// expectedClusterPerms is every cluster-wide API call the grouper makes with the rendering's
// values, and only those.
//
// The onboarding policy (webhook.PodMutator.onboardPod) reads the pod's namespace through the cached client
// when a rule has a namespace selector or a queue from a namespace label.
func expectedClusterPerms(t *testing.T, r *rendering) permSet {
	t.Helper()
	v := &r.values
	want := permSet{}
	// Pods: the cached client's informer (list, watch) and Get (pod_controller.go Reconcile), the
	// owner walk's uncached metadata Get of owners that are pods (Spark executors, LWS workers),
	// and the merge patch of the pod's annotations and sub-group label (labelPod).
	want.add("", "pods", "get", "list", "watch", "patch")
	// Events through client-go's EventRecorder: created, and patched when repeated.
	want.add("", "events", "create", "patch")
	// PodGroups: read through the cached client (get, list, watch) plus what Applier writes.
	want.add(v2alpha2.SchemeGroupVersion.Group, "podgroups", "get", "list", "watch")
	for _, verb := range podGroupWriteVerbs(t) {
		res := "podgroups"
		if f := strings.Fields(verb); len(f) == 2 {
			verb, res = f[0], "podgroups/"+f[1]
		}
		want.add(v2alpha2.SchemeGroupVersion.Group, res, verb)
	}
	// KAI's default metadata uses a priority class only if it exists (defaultgrouper, cached).
	want.add("scheduling.k8s.io", "priorityclasses", "get", "list", "watch")
	// podgrouper/runtime/crdlint: the workload kind's CRD, read by name to lint each definition.
	want.add("apiextensions.k8s.io", "customresourcedefinitions", "get")
	// podgrouper/runtime/kaitopology.Watcher: a dynamic informer on KAI's Topology objects (findings).
	want.add("kai.scheduler", "topologies", "get", "list", "watch")
	// sources.Cluster: a dynamic informer on Karta objects, with --cluster-definitions.
	if v.ClusterDefs {
		want.add("run.ai", "kartas", "get", "list", "watch")
	}
	// The webhook applies --webhook-namespace-selector by reading the pod's namespace through the
	// cached client.
	if v.Webhook.Enabled && (len(v.Webhook.NamespaceSelector) > 0 || onboardingReadsNamespaces(v)) {
		want.add("", "namespaces", "get", "list", "watch")
	}
	// Workload kinds: read in full through the cache and watched, and what ownerskip.Marker does
	// when the grouper marks workloads; intermediate owners: metadata Get.
	marks := marksWorkloads(t, r)
	for _, k := range append(append([]kindRule{}, v.WorkloadKinds...), v.ExtraWorkloadKinds...) {
		for _, res := range k.Resources {
			want.add(k.APIGroup, res, "get", "list", "watch")
			if marks {
				want.add(k.APIGroup, res, markerVerbs(t)...)
			}
		}
	}
	// The stray PodGroup collector (strays.Collector), outside dry-run.
	if deletesStrays(t, r) {
		want.add(v2alpha2.SchemeGroupVersion.Group, "podgroups", strayVerbs(t)...)
	}
	for _, k := range v.OwnerKinds {
		for _, res := range k.Resources {
			want.add(k.APIGroup, res, "get")
		}
	}
	// Secure metrics: the reviews the metrics server's authentication and authorization filter
	// (app.MetricsAuth) makes for each scrape.
	if grouperOptions(t, r).MetricsSecure {
		for p := range metricsAuthCalls(t).perms {
			want[p] = true
		}
	}
	// The self-signed webhook certificate: what webhook.SelfSigned does cluster-wide (the caBundle
	// of the MutatingWebhookConfiguration).
	if selfSigned(t, r) {
		for p := range selfSignedPerms(t, r) {
			if p.resource != "secrets" {
				want[p] = true
			}
		}
	}
	return want
}

// selfSigned is whether the grouper runs with --webhook-self-signed.
func selfSigned(t *testing.T, r *rendering) bool {
	t.Helper()
	o := grouperOptions(t, r)
	return o.WebhookPort != 0 && o.WebhookSelfSigned
}

// expectedRolePerms is every API call the grouper makes in the release namespace through its
// Role: the leader election Lease (client-go's LeaseLock: Get and Update the named Lease, Create
// it the first time) and the self-signed certificate's Secret.
func expectedRolePerms(t *testing.T, r *rendering) permSet {
	t.Helper()
	want := permSet{}
	if r.values.leaderElect() {
		lease := r.values.LeaderElection.LeaseName
		want[perm{group: "coordination.k8s.io", resource: "leases", verb: "create"}] = true
		want[perm{group: "coordination.k8s.io", resource: "leases", verb: "get", name: lease}] = true
		want[perm{group: "coordination.k8s.io", resource: "leases", verb: "update", name: lease}] = true
	}
	if selfSigned(t, r) {
		for p := range selfSignedPerms(t, r) {
			if p.resource == "secrets" {
				want[p] = true
			}
		}
	}
	return want
}

func TestApplierVerbsAreGranted(t *testing.T) {
	verbs := podGroupWriteVerbs(t)
	t.Logf("podgroup.Applier uses on PodGroups: %v", verbs)
	if len(verbs) == 0 {
		t.Fatal("recorded no PodGroup calls from podgroup.Applier")
	}
}

func TestRBACLeastPrivilege(t *testing.T) {
	forEachFile(t, func(t *testing.T, r *rendering) {
		// No wildcard anywhere, in any role.
		for _, kind := range []string{"ClusterRole", "Role"} {
			for _, u := range r.ofKind(kind) {
				role := decodeStrict[rbacv1.ClusterRole](t, u)
				for _, rule := range role.Rules {
					for _, list := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs, rule.ResourceNames, rule.NonResourceURLs} {
						for _, s := range list {
							if strings.Contains(s, "*") {
								t.Errorf("%s %s has a wildcard %q in %+v", kind, u.GetName(), s, rule)
							}
						}
					}
				}
			}
		}
		// The grouper's ClusterRole, and with secure metrics the scrapers' metrics-reader (checked
		// by TestMetricsReaderRBAC).
		wantRoles := 1
		if grouperOptions(t, r).MetricsSecure {
			wantRoles++
		}
		if n := len(r.ofKind("ClusterRole")); n != wantRoles {
			t.Errorf("%d ClusterRoles rendered, want %d", n, wantRoles)
		}
		cr := decodeStrict[rbacv1.ClusterRole](t, r.must(t, "ClusterRole", fullname))
		diffPerms(t, "ClusterRole "+fullname, permsOf(cr.Rules), expectedClusterPerms(t, r))

		r.must(t, "ServiceAccount", fullname)
		crb := decodeStrict[rbacv1.ClusterRoleBinding](t, r.must(t, "ClusterRoleBinding", fullname))
		wantSubject := rbacv1.Subject{Kind: "ServiceAccount", Name: fullname, Namespace: namespace}
		if crb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: fullname}) || len(crb.Subjects) != 1 || crb.Subjects[0] != wantSubject {
			t.Errorf("ClusterRoleBinding: roleRef %+v subjects %+v, want the ClusterRole bound to %+v", crb.RoleRef, crb.Subjects, wantSubject)
		}
		dep, _ := grouper(t, r)
		if dep.Spec.Template.Spec.ServiceAccountName != fullname {
			t.Errorf("the Deployment runs as %q, the bindings name %q", dep.Spec.Template.Spec.ServiceAccountName, fullname)
		}

		// The namespaced Role: the Lease and the certificate Secret, nothing else.
		roles, bindings := r.ofKind("Role"), r.ofKind("RoleBinding")
		want := expectedRolePerms(t, r)
		if len(want) == 0 {
			if len(roles)+len(bindings) > 0 {
				t.Errorf("the grouper needs no namespaced rights here, yet %d Roles and %d RoleBindings are rendered", len(roles), len(bindings))
			}
		} else {
			if len(roles) != 1 || len(bindings) != 1 {
				t.Fatalf("%d Roles and %d RoleBindings, want 1 each", len(roles), len(bindings))
			}
			role := decodeStrict[rbacv1.Role](t, r.must(t, "Role", fullname))
			if role.Namespace != namespace {
				t.Errorf("the Role is in %q, want the release namespace %q", role.Namespace, namespace)
			}
			diffPerms(t, "Role "+role.Name, permsOf(role.Rules), want)
			rb := decodeStrict[rbacv1.RoleBinding](t, r.must(t, "RoleBinding", fullname))
			if rb.Namespace != namespace || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name || len(rb.Subjects) != 1 || rb.Subjects[0] != wantSubject {
				t.Errorf("RoleBinding %+v does not bind Role %s to %+v in %s", rb, role.Name, wantSubject, namespace)
			}
		}
		o := grouperOptions(t, r)
		if r.values.leaderElect() {
			lease := r.values.LeaderElection.LeaseName
			if !o.LeaderElect || o.LeaderElectionNamespace != namespace || o.LeaderElectionID != lease {
				t.Errorf("grouper flags: leader-elect %v, namespace %q, id %q; want true, %q, %q (the Lease the Role grants)", o.LeaderElect, o.LeaderElectionNamespace, o.LeaderElectionID, namespace, lease)
			}
		} else if o.LeaderElect {
			t.Error("--leader-elect is on, yet the values turn leader election off")
		}
	})
}

// TestDefaultRBACMatchesTheCode checks the default ClusterRole rule by rule, and that its
// workload kinds are exactly the catalog's kinds KAI v0.17 does not group natively, plus the
// owners between their pods and them.
func TestDefaultRBACMatchesTheCode(t *testing.T) {
	r := render(t, "testdata/default.yaml")
	cr := decodeStrict[rbacv1.ClusterRole](t, r.must(t, "ClusterRole", fullname))
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "patch", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"scheduling.run.ai"}, Resources: []string{"podgroups"}, Verbs: []string{"create", "delete", "get", "list", "update", "watch"}},
		{APIGroups: []string{"scheduling.k8s.io"}, Resources: []string{"priorityclasses"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get"}},
		{APIGroups: []string{"kai.scheduler"}, Resources: []string{"topologies"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"run.ai"}, Resources: []string{"kartas"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"serving.kserve.io"}, Resources: []string{"inferenceservices", "llminferenceservices"}, Verbs: []string{"get", "list", "patch", "watch"}},
		{APIGroups: []string{"apps.nvidia.com"}, Resources: []string{"nimservices"}, Verbs: []string{"get", "list", "patch", "watch"}},
		{APIGroups: []string{"milvus.io"}, Resources: []string{"milvuses"}, Verbs: []string{"get", "list", "patch", "watch"}},
		{APIGroups: []string{"workload.codeflare.dev"}, Resources: []string{"appwrappers"}, Verbs: []string{"get", "list", "patch", "watch"}},
		{APIGroups: []string{"batch.volcano.sh"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "patch", "watch"}},
		{APIGroups: []string{"sparkoperator.k8s.io"}, Resources: []string{"sparkapplications", "sparkconnects"}, Verbs: []string{"get", "list", "patch", "watch"}},
		{APIGroups: []string{"disaggregatedset.x-k8s.io"}, Resources: []string{"disaggregatedsets"}, Verbs: []string{"get", "list", "patch", "watch"}},
		{APIGroups: []string{"kubeflow.org"}, Resources: []string{"paddlejobs"}, Verbs: []string{"get", "list", "patch", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets", "statefulsets"}, Verbs: []string{"get"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get"}},
		{APIGroups: []string{"leaderworkerset.x-k8s.io"}, Resources: []string{"leaderworkersets"}, Verbs: []string{"get"}},
		{APIGroups: []string{"jobset.x-k8s.io"}, Resources: []string{"jobsets"}, Verbs: []string{"get"}},
		{APIGroups: []string{"kubeflow.org"}, Resources: []string{"pytorchjobs"}, Verbs: []string{"get"}},
		{APIGroups: []string{"ray.io"}, Resources: []string{"rayclusters", "rayjobs"}, Verbs: []string{"get"}},
		{APIGroups: []string{"serving.knative.dev"}, Resources: []string{"services", "configurations", "revisions"}, Verbs: []string{"get"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations"}, ResourceNames: []string{fullname}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	}
	if len(cr.Rules) != len(want) {
		t.Errorf("%d rules, want %d:\n got  %+v\n want %+v", len(cr.Rules), len(want), cr.Rules, want)
	}
	for i := range min(len(cr.Rules), len(want)) {
		g, w := cr.Rules[i], want[i]
		if fmt.Sprint(g.APIGroups, g.Resources, g.Verbs, g.ResourceNames, g.NonResourceURLs) != fmt.Sprint(w.APIGroups, w.Resources, w.Verbs, w.ResourceNames, w.NonResourceURLs) {
			t.Errorf("rule %d: got %+v, want %+v", i, g, w)
		}
	}

	// Workload kinds: exactly the catalog's non-native kinds.
	fromCode, children := catalogWorkloadResources(t)
	granted := map[schema.GroupResource]bool{}
	for _, k := range r.values.WorkloadKinds {
		for _, res := range k.Resources {
			granted[schema.GroupResource{Group: k.APIGroup, Resource: res}] = true
		}
	}
	for gr, gvk := range fromCode {
		if !granted[gr] {
			t.Errorf("catalog kind %s is not native in KAI %s but %s is not in the default workloadKinds", gvk, native.DefaultRelease, gr)
		}
	}
	for gr := range granted {
		if _, ok := fromCode[gr]; !ok {
			t.Errorf("default workloadKinds grants %s, which is no non-native catalog kind", gr)
		}
	}

	// Owner kinds: exactly defaultOwnerKinds, each needed by a default workload kind.
	defaultKinds := map[string]bool{}
	for _, gvk := range fromCode {
		defaultKinds[gvk.GroupKind().String()] = true
	}
	ownerGranted := map[schema.GroupResource]bool{}
	for _, k := range r.values.OwnerKinds {
		for _, res := range k.Resources {
			ownerGranted[schema.GroupResource{Group: k.APIGroup, Resource: res}] = true
		}
	}
	wantOwners := map[schema.GroupResource]bool{}
	for _, o := range defaultOwnerKinds {
		gr := schema.GroupResource{Group: o.group, Resource: o.resource}
		wantOwners[gr] = true
		if !ownerGranted[gr] {
			t.Errorf("default ownerKinds lacks %s (an owner between the pods of %v and the workload)", gr, o.neededBy)
		}
		for _, k := range o.neededBy {
			if !defaultKinds[k] {
				t.Errorf("owner kind %s is kept for %s, which is not a default workload kind", gr, k)
			}
		}
	}
	for gr := range ownerGranted {
		if !wantOwners[gr] {
			t.Errorf("default ownerKinds grants %s, which no default workload kind needs", gr)
		}
	}

	// Every child kind the catalog names for those kinds, and the controllers under it, can be
	// read by the owner walk.
	readable := permsOf(cr.Rules)
	for _, c := range children {
		chain, ok := builtinChains[c.GroupKind()]
		if !ok {
			t.Errorf("catalog child kind %s: add the resources between it and its pods to builtinChains", c)
			continue
		}
		for _, gr := range chain {
			if !readable[perm{group: gr.Group, resource: gr.Resource, verb: "get"}] {
				t.Errorf("catalog child kind %s: the owner walk may not get %s", c, gr)
			}
		}
	}
}
