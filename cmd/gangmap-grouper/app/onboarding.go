package app

import (
	"fmt"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/runtime/onboarding"
	gangmapwebhook "github.com/gangmap/gangmap/podgrouper/runtime/webhook"
)

// addOnboarding runs the onboarding policy's file source and its namespace check (a rule's queue
// label missing on a namespace it selects) and gives the webhook the policy, when
// --onboarding-policy is set. A policy kind is known when the registry has an active
// definition for it (any version).
func addOnboarding(mgr manager.Manager, o *Options, registry *definitions.Registry, m *gangmapwebhook.PodMutator) error {
	if o.OnboardingPolicy == "" {
		return nil
	}
	if _, err := os.Stat(o.OnboardingPolicy); err != nil {
		return fmt.Errorf("--onboarding-policy: %w", err)
	}
	src := &onboarding.Source{Path: o.OnboardingPolicy, Interval: o.DefinitionsPoll, Known: knownKind(registry)}
	if err := mgr.Add(src); err != nil {
		return err
	}
	recorder := mgr.GetEventRecorderFor("gangmap-onboarding")
	// The owner walk keeps the top-owner labels the policy's rules read (queue.fromOwnerLabel).
	m.Decider.Walker.ExtraLabels = func() []string { return src.Current().OwnerLabelKeys() }
	m.Onboarding, m.QueueLabelKey, m.Recorder = src.Current, o.QueueLabelKey, recorder
	return mgr.Add(&onboarding.NamespaceAuditor{Policy: src.Current, Changes: src.Changes(),
		Namespaces: mgr.GetClient(), Informers: mgr.GetCache(), Recorder: recorder})
}

// knownKind says whether the registry has an active definition for a kind, in any version.
func knownKind(registry *definitions.Registry) func(schema.GroupKind) bool {
	return func(gk schema.GroupKind) bool {
		return slices.ContainsFunc(registry.Entries(), func(e definitions.Entry) bool {
			return e.Active && e.Kind.Group == gk.Group && e.Kind.Kind == gk.Kind
		})
	}
}
