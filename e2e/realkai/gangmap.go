package realkai

import (
	"context"
	"fmt"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gangmap/gangmap/e2e/framework"
)

// GangmapWebhook is gangmap's MutatingWebhookConfiguration for every namespace, as the chart
// installs it (framework.GangmapWebhook); pass it in Options.MutatingWebhooks so that envtest
// serves its certificate to StartGangmap's grouper.
func GangmapWebhook() *admissionregistrationv1.MutatingWebhookConfiguration {
	return framework.GangmapWebhook("gangmap-grouper", &metav1.LabelSelector{})
}

// StartGangmap runs gangmap's grouper binary bin (framework.BuildGrouperBinary) as a process
// beside KAI, with its controller and, when Start installed GangmapWebhook, its admission webhook
// where the API server calls it, and extra flags (e.g. --native-kinds-remove). Its log is
// LogDir/gangmap-grouper.log. Kill and Start it again to take gangmap down and up.
func (c *Cluster) StartGangmap(ctx context.Context, bin string, extra ...string) (*framework.GrouperProcess, error) {
	w := c.Env.WebhookInstallOptions
	var args []string
	if w.LocalServingCertDir != "" {
		args = []string{"--webhook-host=" + w.LocalServingHost, "--webhook-port=" + strconv.Itoa(w.LocalServingPort), "--webhook-cert-dir=" + w.LocalServingCertDir}
	}
	args = append(args, "--scheduler-name="+SchedulerName, "--queue-label-key="+QueueLabelKey, "--nodepool-label-key="+NodePoolLabelKey)
	g, err := framework.StartGrouperProcess(ctx, bin, c.Kubeconfig, c.LogDir, append(args, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("gangmap-grouper: %w", err)
	}
	return g, nil
}
