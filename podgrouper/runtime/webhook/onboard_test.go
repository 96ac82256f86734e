package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/runtime/onboarding"
)

const onboardPolicy = `
rules:
  - name: jobsets
    kinds: [{group: jobset.x-k8s.io, kind: JobSet}]
    namespaceSelector: {matchLabels: {onboard: "yes"}}
    queue: {fromNamespaceLabel: team-queue}
    labels: {platform: ml}
`

// onboardFixture is the warm webhook of BenchmarkAdmit with the onboarding policy above and the
// pod's namespace labelled as given.
func onboardFixture(t *testing.T, nsLabels map[string]string, dryRun bool) (*admissionFixture, *record.FakeRecorder) {
	f := newAdmissionFixture(t)
	policy, err := onboarding.Parse([]byte(onboardPolicy), "policy.yaml", func(gk schema.GroupKind) bool { return gk.Kind == "JobSet" })
	require.NoError(t, err)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench", Labels: nsLabels}}
	rec := record.NewFakeRecorder(10)
	m := f.webhook.Handler.(*PodMutator)
	m.DryRun = dryRun
	m.Onboarding, m.Namespaces, m.QueueLabelKey, m.Recorder = func() *onboarding.Compiled { return policy }, namespaceReader{ns}, "kai.scheduler/queue", rec
	return f, rec
}

// namespaceReader reads one namespace, as the manager's cache does (a deep copy).
type namespaceReader struct{ ns *corev1.Namespace }

func (r namespaceReader) Get(_ context.Context, key client.ObjectKey, out client.Object, _ ...client.GetOption) error {
	if key.Name != r.ns.Name {
		return apierrors.NewNotFound(corev1.Resource("namespaces"), key.Name)
	}
	r.ns.DeepCopyInto(out.(*corev1.Namespace))
	return nil
}

func (r namespaceReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

// unonboardedPod is the fixture's JobSet worker pod as its Job creates it without a scheduler name
// (the API server defaults it to default-scheduler) and without labels of gangmap's.
func unonboardedPod(t *testing.T, f *admissionFixture) []byte {
	return f.variant(t, func(pod map[string]any) {
		pod["spec"].(map[string]any)["schedulerName"] = "default-scheduler"
		md := pod["metadata"].(map[string]any)
		delete(md["labels"].(map[string]any), "kai.scheduler/queue")
	})
}

// TestOnboardingPolicyOnAdmission: a JobSet pod created without the KAI scheduler in a selected
// namespace gets kai-scheduler, the namespace's queue, the rule's label and, in the same patch,
// its PodGroup; nothing else of the pod changes; an Event on the JobSet says so.
func TestOnboardingPolicyOnAdmission(t *testing.T) {
	f, rec := onboardFixture(t, map[string]string{"onboard": "yes", "team-queue": "team-a"}, false)
	raw := unonboardedPod(t, f)
	var out bytes.Buffer
	resp, err := f.admit(context.Background(), request(raw), &out)
	require.NoError(t, err)
	require.True(t, resp.Allowed)
	require.NotEmpty(t, resp.Patch, resp.Result)
	p, err := jsonpatch.DecodePatch(resp.Patch)
	require.NoError(t, err)
	patched, err := p.Apply(raw)
	require.NoError(t, err)
	var before, after map[string]any
	require.NoError(t, json.Unmarshal(raw, &before))
	require.NoError(t, json.Unmarshal(patched, &after))

	spec := after["spec"].(map[string]any)
	assert.Equal(t, "kai-scheduler", spec["schedulerName"])
	lbl := after["metadata"].(map[string]any)["labels"].(map[string]any)
	assert.Equal(t, "team-a", lbl["kai.scheduler/queue"])
	assert.Equal(t, "ml", lbl["platform"])
	ann := after["metadata"].(map[string]any)["annotations"].(map[string]any)
	assert.Equal(t, "true", ann["kai.scheduler/skip-podgrouper"])
	assert.Contains(t, ann["pod-group-name"], "pg-")

	// nothing else changed: take out exactly what onboarding and grouping set
	spec["schedulerName"] = "default-scheduler"
	delete(lbl, "kai.scheduler/queue")
	delete(lbl, "platform")
	delete(lbl, "kai.scheduler/subgroup-name")
	for _, k := range []string{"kai.scheduler/skip-podgrouper", "pod-group-name"} {
		delete(ann, k)
	}
	bmd := before["metadata"].(map[string]any)
	delete(bmd["labels"].(map[string]any), "kai.scheduler/subgroup-name")
	if a, ok := bmd["annotations"].(map[string]any); ok {
		delete(a, "kai.scheduler/skip-podgrouper")
		delete(a, "pod-group-name")
	}
	assert.Equal(t, before, after)
	select {
	case e := <-rec.Events:
		assert.Contains(t, e, "Normal GangmapOnboarded Pods onboarded to kai-scheduler by onboarding rule jobsets")
	default:
		t.Fatal("no Event")
	}
}

// TestOnboardingPolicyLeavesOthersAlone: a namespace outside the selector, a pod naming another
// scheduler, and shadow mode all leave the pod unchanged.
func TestOnboardingPolicyLeavesOthersAlone(t *testing.T) {
	for name, tc := range map[string]struct {
		ns     map[string]string
		dryRun bool
		sched  string
	}{
		"namespace not selected": {ns: map[string]string{"team-queue": "team-a"}},
		"dry run":                {ns: map[string]string{"onboard": "yes", "team-queue": "team-a"}, dryRun: true},
		"another scheduler":      {ns: map[string]string{"onboard": "yes", "team-queue": "team-a"}, sched: "volcano"},
	} {
		t.Run(name, func(t *testing.T) {
			f, _ := onboardFixture(t, tc.ns, tc.dryRun)
			raw := unonboardedPod(t, f)
			if tc.sched != "" {
				var pod map[string]any
				require.NoError(t, json.Unmarshal(raw, &pod))
				pod["spec"].(map[string]any)["schedulerName"] = tc.sched
				raw, _ = json.Marshal(pod)
			}
			var out bytes.Buffer
			resp, err := f.admit(context.Background(), request(raw), &out)
			require.NoError(t, err)
			assert.True(t, resp.Allowed)
			assert.Empty(t, resp.Patch)
		})
	}
}

// TestOnboardingWithoutQueueLabel: the selected namespace lacks the label the rule takes the queue
// from: the rule is refused there, so the pod is admitted unchanged (not onboarded to a queue
// nobody chose, never blocked), a Warning Event on the workload names the policy field and the
// namespace, and gangmap_onboarded_pods_total counts it as NamespaceQueueMissing.
func TestOnboardingWithoutQueueLabel(t *testing.T) {
	f, rec := onboardFixture(t, map[string]string{"onboard": "yes"}, false)
	before := testutil.ToFloat64(onboarded.WithLabelValues("jobsets", OnboardedRefused))
	raw := unonboardedPod(t, f)
	var out bytes.Buffer
	resp, err := f.admit(context.Background(), request(raw), &out)
	require.NoError(t, err)
	assert.True(t, resp.Allowed)
	assert.Empty(t, resp.Patch)
	ev := <-rec.Events
	assert.Contains(t, ev, "Warning GangmapOnboarded Pods not onboarded: onboarding policy rules[0].queue.fromNamespaceLabel: namespace \"bench\"")
	assert.Equal(t, before+1, testutil.ToFloat64(onboarded.WithLabelValues("jobsets", OnboardedRefused)))
}

// TestOnboardingIgnoresInvalidOwnerReference: with an onboarding policy in force, a pod whose
// owner reference names its JobSet with another UID (a pod forging an owner it may not have, as
// owners.InvalidReferenceError rejects) is not onboarded and is admitted unchanged as a pod
// without an owner, the way the decision path treats it: no webhook error and no error log per
// such pod (before, each counted in gangmap_webhook_errors_total{reason="Onboard"}).
func TestOnboardingIgnoresInvalidOwnerReference(t *testing.T) {
	f, _ := onboardFixture(t, map[string]string{"onboard": "yes", "team-queue": "team-a"}, false)
	raw := f.variant(t, func(pod map[string]any) {
		pod["spec"].(map[string]any)["schedulerName"] = "default-scheduler"
		md := pod["metadata"].(map[string]any)
		md["ownerReferences"].([]any)[0].(map[string]any)["uid"] = "00000000-0000-0000-0000-0000000000ff"
	})
	before := testutil.ToFloat64(admissionErrors.WithLabelValues("Onboard"))
	var out bytes.Buffer
	resp, err := f.admit(context.Background(), request(raw), &out)
	require.NoError(t, err)
	assert.True(t, resp.Allowed)
	assert.Empty(t, resp.Patch)
	assert.Equal(t, before, testutil.ToFloat64(admissionErrors.WithLabelValues("Onboard")))
}

// TestOnboardingIgnoresAbsentOwner: with an onboarding policy in force, a pod whose owner reference
// names an owner that does not exist (a deleted or made-up workload, or a kind the API server does
// not serve) is not onboarded and is admitted unchanged without counting a webhook error (and its
// error log), as the decision path treats it (no owner object: not gangmap's). Before, each such
// pod any author wrote counted an Onboard error with an error log.
func TestOnboardingIgnoresAbsentOwner(t *testing.T) {
	f, _ := onboardFixture(t, map[string]string{"onboard": "yes", "team-queue": "team-a"}, false)
	w := f.webhook.Handler.(*PodMutator).Decider.Walker
	w.Reader = noMatchReader{w.Reader}
	for name, ref := range map[string]map[string]any{
		"deleted owner": {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "ghost", "uid": "00000000-0000-0000-0000-0000000000aa", "controller": true},
		"unknown kind":  {"apiVersion": "nope.example.com/v1", "kind": "Nope", "name": "x", "uid": "00000000-0000-0000-0000-0000000000bb", "controller": true},
	} {
		t.Run(name, func(t *testing.T) {
			raw := f.variant(t, func(pod map[string]any) {
				pod["spec"].(map[string]any)["schedulerName"] = "default-scheduler"
				pod["metadata"].(map[string]any)["ownerReferences"] = []any{ref}
			})
			before := testutil.ToFloat64(admissionErrors.WithLabelValues("Onboard"))
			var out bytes.Buffer
			resp, err := f.admit(context.Background(), request(raw), &out)
			require.NoError(t, err)
			assert.True(t, resp.Allowed)
			assert.Empty(t, resp.Patch)
			assert.Equal(t, before, testutil.ToFloat64(admissionErrors.WithLabelValues("Onboard")))
		})
	}
}

// noMatchReader answers a kind of group nope.example.com as a real API server's RESTMapper does
// for a kind it does not serve (no match), and reads everything else from Reader.
type noMatchReader struct{ client.Reader }

func (r noMatchReader) Get(ctx context.Context, key client.ObjectKey, out client.Object, opts ...client.GetOption) error {
	if gvk := out.GetObjectKind().GroupVersionKind(); gvk.Group == "nope.example.com" {
		return &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
	}
	return r.Reader.Get(ctx, key, out, opts...)
}

// TestOnboardingDryRunRequestHasNoSideEffects: a server-side dry run of a pod create (kubectl
// create --dry-run=server; the chart declares the webhook sideEffects: None, so the API server
// calls it) gets the same patch as the create would, so the dry run shows the onboarded pod, but
// records no Event on the workload and counts nothing: no pod was created. Before, each dry run
// put "Pods onboarded" on the workload.
func TestOnboardingDryRunRequestHasNoSideEffects(t *testing.T) {
	f, rec := onboardFixture(t, map[string]string{"onboard": "yes", "team-queue": "team-a"}, false)
	raw := unonboardedPod(t, f)
	var out bytes.Buffer
	created, err := f.admit(context.Background(), request(raw), &out)
	require.NoError(t, err)
	require.NotEmpty(t, created.Patch)
	<-rec.Events // the create's Event

	counted := testutil.ToFloat64(onboarded.WithLabelValues("jobsets", OnboardedResult))
	req := request(raw)
	dryRun := true
	req.DryRun = &dryRun
	resp, err := f.admit(context.Background(), req, &out)
	require.NoError(t, err)
	assert.True(t, resp.Allowed)
	assert.JSONEq(t, string(created.Patch), string(resp.Patch), "the dry run shows what the create gets")
	select {
	case e := <-rec.Events:
		t.Fatalf("a dry-run request recorded an Event: %s", e)
	default:
	}
	assert.Equal(t, counted, testutil.ToFloat64(onboarded.WithLabelValues("jobsets", OnboardedResult)))
}
