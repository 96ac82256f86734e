package charttest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/podgrouper/runtime/onboarding"
)

// onboardingReadsNamespaces says whether the values' onboarding policy makes the webhook read
// namespaces: a rule with a namespace selector or a queue from a namespace label.
func onboardingReadsNamespaces(v *chartValues) bool {
	if !v.Webhook.Enabled || !v.Onboarding.Enabled {
		return false
	}
	for _, r := range v.Onboarding.Rules {
		q, _ := r["queue"].(map[string]any)
		if r["namespaceSelector"] != nil || (q != nil && q["fromNamespaceLabel"] != nil) {
			return true
		}
	}
	return false
}

// TestOnboardingPolicy: with onboarding on, the rules are rendered into a ConfigMap that the
// grouper's own parser accepts rule for rule, mounted read-only where --onboarding-policy points;
// with it off (every other values file), there is neither flag nor ConfigMap.
func TestOnboardingPolicy(t *testing.T) {
	forEachFile(t, func(t *testing.T, r *rendering) {
		dep, c := grouper(t, r)
		o := grouperOptions(t, r)
		u := r.find("ConfigMap", fullname+"-onboarding")
		if !r.values.Onboarding.Enabled {
			if o.OnboardingPolicy != "" || u != nil {
				t.Fatalf("onboarding off, but --onboarding-policy %q and ConfigMap %v", o.OnboardingPolicy, u != nil)
			}
			return
		}
		if u == nil {
			t.Fatal("onboarding on, but no onboarding ConfigMap")
		}
		cm := decodeStrict[corev1.ConfigMap](t, u)
		policy, err := onboarding.Parse([]byte(cm.Data["policy.yaml"]), "policy.yaml", nil)
		if err != nil {
			t.Fatalf("the grouper refuses the rendered policy: %v", err)
		}
		var rules onboarding.Policy
		if err := yaml.Unmarshal([]byte(cm.Data["policy.yaml"]), &rules); err != nil || len(rules.Rules) != 1 || len(rules.Rules[0].Kinds) != 1 || policy.Empty() {
			t.Fatalf("rendered policy has rules %+v (%v), want the values' one rule of one kind", rules.Rules, err)
		}
		m := mountAt(c, "/etc/gangmap/onboarding")
		vol := volume(t, dep, "onboarding")
		if o.OnboardingPolicy != "/etc/gangmap/onboarding/policy.yaml" || m == nil || !m.ReadOnly || vol == nil || vol.ConfigMap == nil || vol.ConfigMap.Name != cm.Name {
			t.Fatalf("--onboarding-policy %q is not the read-only mount of ConfigMap %s (mount %+v, volume %+v)", o.OnboardingPolicy, cm.Name, m, vol)
		}
	})
}
