//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gangmapcli "github.com/gangmap/gangmap/cmd/gangmap/app"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// describeOut is the part of "gangmap describe -o json" this test checks.
type describeOut struct {
	Workloads []struct {
		Workload struct{ Kind, Name, Namespace string }
		UID      string
		Roles    []struct {
			Name       string
			Pods       int64
			GPUsPerPod float64
			GPUs       float64
		}
		TotalGPUs float64
		PodGPUs   float64
		Pods      struct{ Total, Ready int }
		PodGroups []struct {
			Name, Verdict, Writer string
			Differences           []string
		}
		UnclaimedPods []struct{ Name string }
		Error         string
	}
}

// runCLI runs the gangmap CLI in-process against the shared control plane.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--kubeconfig", cp.Kubeconfig, "--native-kinds-remove", strings.Join(nativeKindsRemoved, ","))
	code := gangmapcli.Run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestDescribeSeedJobSet: the seed example (testdata/jobset-leader-workers.yaml: leader 1 pod,
// workers 2 pods, 4 GPUs a pod) on the real API server, its pods created as the JobSet operator
// creates them (Jobs owned by the JobSet, pods owned by the Jobs), grouped by the grouper of
// main_test.go. "gangmap describe jobset/train-llm" shows one JobSet with roles leader and
// workers, 12 GPUs in all, and the same 12 summed over what the pods request; the PodGroup the
// grouper wrote matches the plan, and a PodGroup as KAI's default grouper writes it is reported
// as foreign with its differences.
func TestDescribeSeedJobSet(t *testing.T) {
	ctx := context.Background()
	ns := "describe"
	js, pods := runSeedJobSet(t, ctx, ns)
	var requested gang.GPUs
	for _, p := range pods {
		g, err := gang.PodGPUsOf(p)
		require.NoError(t, err)
		requested += g.Devices
	}
	require.Equal(t, gang.WholeGPUs(12), requested, "3 pods × 4 GPUs, as created from the templates")
	pgName := fmt.Sprintf("pg-%s-jobset", js.GetUID())
	_, err := cp.WaitForPodGroup(ctx, ns, pgName, timeout)
	require.NoError(t, err)
	// What KAI's default grouper would have written for the JobSet: pg-<name>-<uid>, minMember 1.
	kai := &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pg-%s-%s", js.GetName(), js.GetUID()), Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{framework.UnstructuredOwnerRef(js)}},
		Spec: v2alpha2.PodGroupSpec{MinMember: ptr.To[int32](1), Queue: "default-queue"}}
	require.NoError(t, cp.Client.Create(ctx, kai))
	// A pod of another workload in the namespace: not this JobSet's.
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	require.NoError(t, cp.Client.Create(ctx, other))

	stdout, stderr, code := runCLI(t, "describe", "jobset/train-llm", "-n", ns, "-o", "json")
	require.Equal(t, gangmapcli.ExitOK, code, "stderr: %s", stderr)
	var doc describeOut
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	require.Len(t, doc.Workloads, 1, "one JobSet")
	v := doc.Workloads[0]
	assert.Equal(t, "JobSet", v.Workload.Kind)
	assert.Equal(t, string(js.GetUID()), v.UID)
	require.Len(t, v.Roles, 2)
	assert.Equal(t, "leader", v.Roles[0].Name)
	assert.EqualValues(t, 1, v.Roles[0].Pods)
	assert.Equal(t, 4.0, v.Roles[0].GPUs)
	assert.Equal(t, "workers", v.Roles[1].Name)
	assert.EqualValues(t, 2, v.Roles[1].Pods)
	assert.Equal(t, 8.0, v.Roles[1].GPUs)
	assert.Equal(t, 12.0, v.TotalGPUs, "the plan's total")
	assert.Equal(t, requested.Devices(), v.PodGPUs, "matches what the pods request")
	assert.Equal(t, 3, v.Pods.Total, "the unrelated pod is not the JobSet's")
	assert.Empty(t, v.UnclaimedPods)
	require.Len(t, v.PodGroups, 2)
	assert.Equal(t, pgName, v.PodGroups[0].Name)
	assert.Equal(t, "match", v.PodGroups[0].Verdict, "%v", v.PodGroups[0].Differences)
	assert.Equal(t, kai.Name, v.PodGroups[1].Name)
	assert.Equal(t, "foreign", v.PodGroups[1].Verdict)
	// The grouper marked the JobSet (KAI's pod-grouper skips it from then on): a PodGroup of KAI's
	// default shape is gangmap's own for pods no gang takes, or KAI's from before the mark.
	assert.Equal(t, "gangmap, for pods no gang of the plan takes (KAI's default shape pg-<name>-<uid>; KAI's pod-grouper skips a workload gangmap marked), or KAI's default grouper before the mark", v.PodGroups[1].Writer)
	assert.Contains(t, v.PodGroups[1].Differences, "minMember: planned -, existing 1 (vs gangmap's "+pgName+")")

	// The table, with the kind typed as its plural, its Kind and its short resource form.
	for _, kind := range []string{"jobsets", "JobSet", "jobsets.jobset.x-k8s.io"} {
		table, stderr, code := runCLI(t, "describe", kind, "train-llm", "-n", ns)
		require.Equal(t, gangmapcli.ExitOK, code, "%s: %s", kind, stderr)
		assert.Contains(t, table, "JobSet/train-llm   namespace: describe   definition: jobset-x-k8s-io-jobset-v1alpha2 (catalog)\n", kind)
		assert.Contains(t, table, "TOTAL GPUs: 12 (plan); the 3 pods request 12\n", kind)
	}

	// get: one row for the JobSet.
	rows, stderr, code := runCLI(t, "get", "jobsets", "-n", ns)
	require.Equal(t, gangmapcli.ExitOK, code, stderr)
	// FINDINGS: none for the seed JobSet (its definition is right).
	assert.Regexp(t, `(?m)^train-llm +describe +\S+ +0/3 +12 +`+pgName+`,`+kai.Name+` +None$`, rows)

	// A pod (owned by a Job, owned by the JobSet) and a PodGroup (owned by the JobSet) are
	// described through their top owner, the JobSet, and a note says so; a pod without owners
	// is its own workload.
	for _, obj := range []string{"pod/" + pods[1].Name, "podgroup/" + pgName} {
		stdout, stderr, code := runCLI(t, "describe", obj, "-n", ns, "-o", "json")
		require.Equal(t, gangmapcli.ExitOK, code, "%s: %s", obj, stderr)
		var doc describeOut
		require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
		require.Len(t, doc.Workloads, 1, obj)
		assert.Equal(t, "JobSet", doc.Workloads[0].Workload.Kind, obj)
		assert.Equal(t, string(js.GetUID()), doc.Workloads[0].UID, obj)
		assert.Equal(t, 3, doc.Workloads[0].Pods.Total, obj)
		assert.Contains(t, stderr, "belongs to JobSet/train-llm (its top owner, the workload KAI groups its pods by): describing JobSet/train-llm", obj)
	}
	stdout, stderr, code = runCLI(t, "describe", "pod/unrelated", "-n", ns, "-o", "json")
	require.Equal(t, gangmapcli.ExitOK, code, stderr)
	var bare describeOut
	require.NoError(t, json.Unmarshal([]byte(stdout), &bare), stdout)
	require.Len(t, bare.Workloads, 1)
	assert.Equal(t, "Pod", bare.Workloads[0].Workload.Kind, "a pod without owners is its own top owner")
	assert.NotContains(t, stderr, "belongs to")
	// get lists workloads: pods and PodGroups are refused with what to run instead.
	for kind, short := range map[string]string{"pods": "pod", "podgroups": "podgroup"} {
		_, stderr, code := runCLI(t, "get", kind, "-n", ns)
		assert.Equal(t, gangmapcli.ExitUnusable, code, kind)
		assert.Contains(t, stderr, kind+": not a workload kind", kind)
		assert.Contains(t, stderr, "gangmap describe "+short+"/NAME", kind)
	}

	// Errors: an unknown kind and a missing workload exit 1.
	_, stderr, code = runCLI(t, "describe", "nosuchkind/x", "-n", ns)
	assert.Equal(t, gangmapcli.ExitProblems, code)
	assert.Contains(t, stderr, `doesn't have a resource type "nosuchkind"`)
	_, stderr, code = runCLI(t, "describe", "jobset/missing", "-n", ns)
	assert.Equal(t, gangmapcli.ExitProblems, code)
	assert.Contains(t, stderr, `JobSet "missing" not found in namespace describe`)
}
