//go:build e2e

// Package statuscluster checks the recording harness of the status corpus (hack/statuscluster and
// hack/record-status/lib.sh) against kube-controller-manager's own Job controller: a pod the
// script succeeds or fails must read to the Job controller as a container that exited so, or a
// recorded operator status would rest on pod states no kubelet writes.
package statuscluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

// script runs one Job per pod exit of lib.sh on the harness and prints both recorded Jobs.
const script = `source hack/record-status/lib.sh
start_cluster "$DIR"
for job in ok bad; do
  kubectl create job "$job" --image=busybox -- true >/dev/null
  kubectl patch job "$job" --type=merge -p '{"spec":{"backoffLimit":0}}' >/dev/null
done
kubectl create job loop --image=busybox --dry-run=client -o json -- true |
  jq '.spec.backoffLimit = 2 | .spec.template.spec.restartPolicy = "OnFailure"' | kubectl create -f - >/dev/null
for job in ok bad loop; do
  wait_for "[[ \$(kubectl get pods -l job-name=$job -o jsonpath='{.items[0].status.phase}') == Running ]]" 120
done
pod_succeed default "$(pods default job-name=ok)"
pod_fail default "$(pods default job-name=bad)" 3
pod_crashloop default "$(pods default job-name=loop)" 2
wait_for "kubectl get job ok -o jsonpath='{.status.completionTime}' | grep -q ." 120
for job in bad loop; do
  wait_for "kubectl get job $job -o jsonpath='{.status.conditions[?(@.type==\"Failed\")].status}' | grep -q True" 120
  snapshot jobs $job default > "$DIR/$job.yaml"
done
snapshot jobs ok default > "$DIR/ok.yaml"
`

// TestJobControllerReadsScriptedPodExits: the Job whose pod pod_succeed finished is Complete
// (reason CompletionsReached, kube's job controller, pkg/controller/job/job_controller.go
// syncJob), the one whose pod pod_fail failed is Failed with reason BackoffLimitExceeded
// (backoffLimit 0: one failed pod exceeds it), and the restartPolicy OnFailure one whose
// container pod_crashloop restarted twice is Failed with BackoffLimitExceeded too (backoffLimit 2:
// the controller counts container restarts of a Running pod, pastBackoffLimitOnFailure).
func TestJobControllerReadsScriptedPodExits(t *testing.T) {
	require.NotEmpty(t, os.Getenv("KUBEBUILDER_ASSETS"), "KUBEBUILDER_ASSETS: the control plane of hack/control-plane.sh")
	dir := t.TempDir()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "DIR="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n--- statuscluster log:\n%s", out, readFile(filepath.Join(dir, "statuscluster.log")))
	ok, bad := readJob(t, filepath.Join(dir, "ok.yaml")), readJob(t, filepath.Join(dir, "bad.yaml"))
	require.Equal(t, int32(1), ok.Status.Succeeded)
	require.Equal(t, "CompletionsReached", condition(ok, batchv1.JobComplete).Reason)
	require.Equal(t, int32(1), bad.Status.Failed)
	require.Equal(t, "BackoffLimitExceeded", condition(bad, batchv1.JobFailed).Reason)
	loop := readJob(t, filepath.Join(dir, "loop.yaml"))
	require.Equal(t, "BackoffLimitExceeded", condition(loop, batchv1.JobFailed).Reason)
}

func readJob(t *testing.T, path string) *batchv1.Job {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	j := &batchv1.Job{}
	require.NoError(t, yaml.Unmarshal(b, j), path)
	return j
}

func condition(j *batchv1.Job, typ batchv1.JobConditionType) batchv1.JobCondition {
	for _, c := range j.Status.Conditions {
		if c.Type == typ && c.Status == "True" {
			return c
		}
	}
	return batchv1.JobCondition{}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
