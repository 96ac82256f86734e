package charttest

import (
	"context"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
	"github.com/gangmap/gangmap/podgrouper/runtime/strays"
)

// marksWorkloads is whether the rendered grouper marks workloads (ownerskip): --mark-workloads,
// not --dry-run, and a --kai-version that honours the skip annotation (as app.addCoexistence).
func marksWorkloads(t *testing.T, r *rendering) bool {
	t.Helper()
	o := grouperOptions(t, r)
	rel, err := o.KAIRelease()
	if err != nil {
		t.Fatal(err)
	}
	return o.MarkWorkloads && !o.DryRun && rel.HonoursSkipAnnotation()
}

// deletesStrays is whether the rendered grouper deletes stray PodGroups.
func deletesStrays(t *testing.T, r *rendering) bool {
	t.Helper()
	o := grouperOptions(t, r)
	return o.StrayPodGroupGrace > 0 && !o.DryRun
}

var (
	markerOnce, strayOnce   sync.Once
	markerCalls, strayCalls []string
)

// markerVerbs are the verbs ownerskip.Marker uses on a workload kind, recorded by marking and
// unmarking a workload on a fake API server.
func markerVerbs(t *testing.T) []string {
	t.Helper()
	markerOnce.Do(func() {
		w := &unstructured.Unstructured{}
		w.SetAPIVersion("e2e.example.com/v1")
		w.SetKind("CustomJob")
		w.SetNamespace("ns")
		w.SetName("train")
		w.SetUID("uid-1")
		rec := newRecorder(w.DeepCopy())
		m := &ownerskip.Marker{Client: rec}
		ctx := context.Background()
		if _, err := m.Mark(ctx, w); err != nil {
			t.Fatalf("ownerskip.Marker.Mark: %v", err)
		}
		if err := rec.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Unmark(ctx, w); err != nil {
			t.Fatalf("ownerskip.Marker.Unmark: %v", err)
		}
		markerCalls = verbsOn(t, rec, "e2e.example.com", "customjobs", "get")
	})
	return markerCalls
}

// strayVerbs are the verbs strays.Collector uses on PodGroups besides the cached reads, recorded
// by collecting a stray on a fake API server.
func strayVerbs(t *testing.T) []string {
	t.Helper()
	strayOnce.Do(func() {
		owner := &unstructured.Unstructured{}
		owner.SetAPIVersion("e2e.example.com/v1")
		owner.SetKind("CustomJob")
		owner.SetNamespace("ns")
		owner.SetName("train")
		owner.SetUID("uid-1")
		stray := &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pg-train-uid-1",
			Annotations:     map[string]string{kaikeys.TopOwnerMetadata: "name: train"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: "train", UID: "uid-1"}}}}
		rec := newRecorder(stray)
		idx := strays.NewOwnerIndex()
		idx.OnAdd(stray.DeepCopy(), true)
		c := &strays.Collector{Client: rec, Grace: time.Nanosecond, Owned: idx.Owned, Pods: podNames{{Namespace: "ns", Name: "pg-uid-1-customjob"}}}
		ctx := context.Background()
		w := strays.Workload{Owner: owner, Keep: []string{"pg-uid-1-customjob"}}
		for i := 0; i < 2; i++ { // the first look starts the grace period
			if _, err := c.Collect(ctx, w); err != nil {
				t.Fatalf("strays.Collector.Collect: %v", err)
			}
			time.Sleep(time.Millisecond)
		}
		if err := rec.Get(ctx, client.ObjectKeyFromObject(stray), &v2alpha2.PodGroup{}); err == nil {
			t.Fatal("strays.Collector did not delete the stray on the fake API server")
		}
		strayCalls = verbsOn(t, rec, v2alpha2.SchemeGroupVersion.Group, "podgroups", "list")
	})
	return strayCalls
}

// podNames stands for the pod cache (strays.PodGroupNames): the pod-group names its pods carry.
type podNames []types.NamespacedName

func (p podNames) AnnotationValues(string, string) []types.NamespacedName { return p }

// verbsOn returns the verbs rec recorded on group/resource, leaving out the reads the grouper
// makes through its cache anyway (and the test's own reads, read).
func verbsOn(t *testing.T, rec *recorder, group, resource string, read ...string) []string {
	t.Helper()
	skip := map[string]bool{"get": true, "list": true}
	for _, v := range read {
		skip[v] = true
	}
	set := map[string]bool{}
	for p := range rec.calls {
		if p.group == group && p.resource == resource && !skip[p.verb] {
			set[p.verb] = true
		}
	}
	var out []string
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatalf("recorded no writes on %s.%s", resource, group)
	}
	return out
}

// TestCoexistenceRBAC: the skip mark needs patch on the workload kinds (and only those: owner
// kinds keep get); the stray collector needs delete on podgroups; neither in dry-run.
func TestCoexistenceRBAC(t *testing.T) {
	if got := strings.Join(markerVerbs(t), ","); got != "patch" {
		t.Errorf("ownerskip.Marker uses %q on workloads, want patch", got)
	}
	if got := strings.Join(strayVerbs(t), ","); got != "delete" {
		t.Errorf("strays.Collector uses %q on PodGroups, want delete", got)
	}
	def := render(t, "testdata/default.yaml")
	if !marksWorkloads(t, def) || !deletesStrays(t, def) {
		t.Error("by default the grouper marks workloads and deletes strays")
	}
	dry := render(t, "testdata/dryrun-custom-kinds-definitions.yaml")
	if !dry.values.DryRun {
		t.Fatal("testdata/dryrun-custom-kinds-definitions.yaml is expected to turn dry-run on")
	}
	if marksWorkloads(t, dry) || deletesStrays(t, dry) {
		t.Error("in dry-run the grouper neither marks workloads nor deletes PodGroups")
	}
	// TestRBACLeastPrivilege compares each rendering's rules with these expectations.
}

// TestStrictModeNeedsReplicasAndSelector: webhook.strict renders failurePolicy Fail (testdata
// strict-mode.yaml, checked by TestWebhook) and refuses to render with one replica or without a
// namespace selector.
func TestStrictModeNeedsReplicasAndSelector(t *testing.T) {
	r := render(t, "testdata/strict-mode.yaml")
	if got := r.values.failurePolicy(); got != "Fail" {
		t.Fatalf("strict-mode.yaml: failurePolicy %q", got)
	}
	for name, set := range map[string][]string{
		"one replica":           {"webhook.strict=true", "replicas=1", "webhook.namespaceSelector.matchLabels.gangmap=strict"},
		"no namespace selector": {"webhook.strict=true", "replicas=2"},
		"webhook disabled":      {"webhook.strict=true", "replicas=2", "webhook.enabled=false"},
	} {
		args := []string{"template", releaseName, chartDir(t), "--namespace", namespace}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		runHelm(t, "version") // builds helm once
		out, err := exec.Command(filepath.Join(moduleRoot(t), "hack", "helm.sh"), args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "webhook.strict needs") {
			t.Errorf("%s: helm template should fail with a webhook.strict message, got err %v:\n%s", name, err, out)
		}
	}
}
