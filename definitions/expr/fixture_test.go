package expr

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// jobSetJSON is a realistic JobSet (jobset.x-k8s.io/v1alpha2) with a leader and a workers
// replicated job, as a Kubernetes client would return it.
const jobSetJSON = `{
  "apiVersion": "jobset.x-k8s.io/v1alpha2",
  "kind": "JobSet",
  "metadata": {
    "name": "train",
    "namespace": "ml",
    "uid": "6f2c1d9e-3b0a-4f5e-9a51-0c4d2b7e8f10",
    "generation": 3,
    "labels": {"kueue.x-k8s.io/queue-name": "team-a"},
    "annotations": {"autoscaling.knative.dev/min-scale": "2"}
  },
  "spec": {
    "suspend": false,
    "startupPolicy": {"startupPolicyOrder": "InOrder"},
    "replicatedJobs": [
      {
        "name": "leader",
        "template": {"spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
          "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "leader", "image": "trainer:1.0",
             "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "4"}}}]}}}}
      },
      {
        "name": "workers",
        "replicas": 2,
        "template": {"spec": {"parallelism": 4, "completions": 4, "backoffLimit": 0,
          "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "worker", "image": "trainer:1.0",
             "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": 32.5}}}]}}}}
      }
    ]
  },
  "status": {
    "conditions": [{"type": "StartupPolicyCompleted", "status": "True"}],
    "replicatedJobsStatus": [
      {"name": "leader", "ready": 1, "active": 1},
      {"name": "workers", "ready": 2, "active": 2}
    ]
  }
}`

// podJSON is a pod of the workers job of jobSetJSON.
const podJSON = `{
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {
    "name": "train-workers-1-2-abcde",
    "namespace": "ml",
    "labels": {
      "x": "y",
      "jobset.sigs.k8s.io/jobset-name": "train",
      "jobset.sigs.k8s.io/replicatedjob-name": "workers",
      "jobset.sigs.k8s.io/job-index": "1",
      "batch.kubernetes.io/job-completion-index": "2"
    }
  },
  "spec": {"containers": [{"name": "worker", "image": "trainer:1.0"}]}
}`

// unstructuredFrom decodes JSON the way client-go does (integers become int64).
func unstructuredFrom(t testing.TB, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON([]byte(s)))
	return u
}

// jobSet returns the JobSet fixture, normalized.
func jobSet(t testing.TB) map[string]any {
	t.Helper()
	m, err := FromObject(unstructuredFrom(t, jobSetJSON))
	require.NoError(t, err)
	return m
}

// pod returns the pod fixture, normalized.
func pod(t testing.TB) map[string]any {
	t.Helper()
	m, err := FromObject(unstructuredFrom(t, podJSON))
	require.NoError(t, err)
	return m
}

// newTestCompiler builds a Compiler with l (zero fields defaulted).
func newTestCompiler(t testing.TB, l Limits) *Compiler {
	t.Helper()
	c, err := NewCompiler(l)
	require.NoError(t, err)
	return c
}

// evalExpr compiles and evaluates src once.
func evalExpr(t testing.TB, c *Compiler, lang Language, src string, subject Subject, mode Mode, in Input) ([]any, error) {
	t.Helper()
	p, err := c.Compile(lang, src, subject, mode)
	require.NoError(t, err, "compile %s", src)
	require.Equal(t, lang, p.Language())
	require.Equal(t, src, p.Source())
	return p.Eval(context.Background(), in)
}
