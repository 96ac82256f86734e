//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
)

// TestOwnerReferenceNeverCrossesNamespaces: a pod of namespace xns-b whose owner reference names
// xns-a's CustomJob by its UID (UIDs are public: PodGroup names and Events carry them) right after
// gangmap grouped a pod of that CustomJob (its owner is in the owner cache) gets no PodGroup, no
// patch (create response or later), and exactly one Warning Event, also after the pod changes
// (no retry loop). Kubernetes' garbage collector resolves an owner reference in the dependent's
// namespace only; so does gangmap. The same holds for a reference naming xns-b's own CustomJob
// with xns-a's UID, and for one naming it with a UID no object has (a replaced owner).
func TestOwnerReferenceNeverCrossesNamespaces(t *testing.T) {
	ctx := context.Background()
	nsA, nsB := "xns-a", "xns-b"
	require.NoError(t, cp.CreateNamespace(ctx, nsA))
	require.NoError(t, cp.CreateNamespace(ctx, nsB))
	jobA := createCustomJob(t, ctx, nsA, "train", 1, "")
	victim := customJobPod(t, jobA, "worker", "train-worker-0")
	require.NoError(t, cp.Client.Create(ctx, victim))
	require.Equal(t, fmt.Sprintf("pg-%s-customjob", jobA.GetUID()), victim.Annotations[kaikeys.PodGroupName], "xns-a's pod is grouped (its owner is now cached)")
	own := createCustomJob(t, ctx, nsB, "own", 1, "")

	refA := framework.UnstructuredOwnerRef(jobA)
	sameNameOtherUID := framework.UnstructuredOwnerRef(own)
	sameNameOtherUID.UID = jobA.GetUID()
	replaced := framework.UnstructuredOwnerRef(own)
	replaced.UID = types.UID("00000000-0000-0000-0000-000000000000")
	cases := []struct {
		pod  string
		ref  metav1.OwnerReference
		text string
	}{
		{"intruder", refA, "names an object of namespace xns-a from namespace xns-b: owner references never cross namespaces"},
		{"intruder-same-name", sameNameOtherUID, "names an object of namespace xns-a from namespace xns-b"},
		{"replaced-owner", replaced, "CustomJob own has UID " + string(own.GetUID()) + " (it was replaced, or the reference is wrong)"},
	}
	var pods []*corev1.Pod
	for _, c := range cases {
		pod := framework.PodFromTemplate(customTemplate(t, jobA, "worker"), nsB, c.pod, nil, c.ref)
		require.NoError(t, cp.Client.Create(ctx, pod))
		assert.Empty(t, pod.Annotations[kaikeys.PodGroupName], "%s: the webhook did not patch the pod", c.pod)
		assert.Empty(t, pod.Annotations[kaikeys.SkipPodGrouper], "%s: the webhook did not patch the pod", c.pod)
		assert.Empty(t, pod.Labels[kaikeys.SubGroupName], "%s: the webhook did not patch the pod", c.pod)
		assertEvent(t, ctx, nsB, c.pod, controller.ReasonInvalidOwner, c.text)
		pods = append(pods, pod)
	}
	// A change to each pod reconciles it again: still nothing written, still one Event.
	for _, pod := range pods {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`))
		require.NoError(t, cp.Client.Patch(ctx, pod, patch))
	}
	time.Sleep(3 * time.Second)

	pgs, err := cp.PodGroups(ctx, nsB)
	require.NoError(t, err)
	var names []string
	for _, pg := range pgs {
		if pg.Name != fmt.Sprintf("pg-%s-customjob", own.GetUID()) { // own has no pods; none expected anyway
			names = append(names, pg.Name)
		}
	}
	assert.Empty(t, names, "no PodGroup in xns-b")
	evs, err := cp.Kube.CoreV1().Events(nsB).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, pod := range pods {
		got := &corev1.Pod{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), got))
		assert.Equal(t, pod.ResourceVersion, got.ResourceVersion, "%s: gangmap never wrote the pod", pod.Name)
		assert.Empty(t, got.Annotations, "%s", pod.Name)
		var n int32
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == pod.Name {
				assert.Equal(t, controller.ReasonInvalidOwner, e.Reason, "%s: the only Event", pod.Name)
				assert.Equal(t, corev1.EventTypeWarning, e.Type)
				n += max(e.Count, 1)
			}
		}
		assert.Equal(t, int32(1), n, "%s: exactly one Event", pod.Name)
	}
	// xns-a's pod and PodGroup are untouched by all this.
	pg, err := cp.WaitForPodGroup(ctx, nsA, fmt.Sprintf("pg-%s-customjob", jobA.GetUID()), timeout)
	require.NoError(t, err)
	assert.Equal(t, "team-a", pg.Spec.Queue)
}
