package charttest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecisionTimeoutBelowWebhookTimeout: the chart refuses webhook.decisionTimeout (the grouper's
// --webhook-timeout) at or above webhook.timeoutSeconds (the API server's wait): a slower decision
// would time out the API server's call, which with failurePolicy Fail (strict mode) refuses the
// pod, instead of the grouper admitting it unchanged. Below it, the value is passed as given.
func TestDecisionTimeoutBelowWebhookTimeout(t *testing.T) {
	runHelm(t, "version") // builds helm once
	for _, tc := range []struct {
		timeoutSeconds, decisionTimeout string
		refused                         bool
	}{
		{"5", "3s", false},
		{"5", "4999ms", false},
		{"5", "2s500ms", false}, // several units: left to the grouper's own bound
		{"5", "5s", true},
		{"5", "5000ms", true},
		{"2", "2.5s", true},
		{"30", "1m", true},
	} {
		name := tc.timeoutSeconds + "s/" + tc.decisionTimeout
		args := []string{"template", releaseName, chartDir(t), "--namespace", namespace,
			"--set", "webhook.timeoutSeconds=" + tc.timeoutSeconds, "--set", "webhook.decisionTimeout=" + tc.decisionTimeout}
		out, err := exec.Command(filepath.Join(moduleRoot(t), "hack", "helm.sh"), args...).CombinedOutput()
		if tc.refused {
			want := "webhook.decisionTimeout (" + tc.decisionTimeout + ") must be below webhook.timeoutSeconds (" + tc.timeoutSeconds + "s)"
			if err == nil || !strings.Contains(string(out), want) {
				t.Errorf("%s: helm template should fail with %q, got err %v:\n%.2000s", name, want, err, out)
			}
			continue
		}
		if err != nil || !strings.Contains(string(out), "--webhook-timeout="+tc.decisionTimeout+"\n") {
			t.Errorf("%s: helm template should render --webhook-timeout=%s, got err %v:\n%.2000s", name, tc.decisionTimeout, err, out)
		}
	}
}
