// Package v2alpha2 holds gangmap's copy of KAI Scheduler's PodGroup API (scheduling.run.ai/v2alpha2).
//
// KAI's Go module is not available to gangmap, so these types are written field for field from
// KAI's pkg/apis/scheduling/v2alpha2/podgroup_types.go (release v0.17.0 line): the same json
// names, the same pointer-ness and the same kubebuilder markers that shape the CRD (KAI's
// Nullable marker, which controller-gen ignores, and its genclient tag are left out), so that
// the CRD controller-gen generates from them (deploy/crds/scheduling.run.ai_podgroups.yaml) has the shape of KAI's
// deployments/kai-scheduler/crds/scheduling.run.ai_podgroups.yaml, and a PodGroup gangmap
// writes is exactly what KAI's scheduler and podgroupcontroller read.
//
// +kubebuilder:object:generate=true
// +groupName=scheduling.run.ai
package v2alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and Version of the PodGroup API, as in KAI's groupversion_info.go
// (schema.GroupVersion{Group: "scheduling.run.ai", Version: "v2alpha2"}).
const (
	Group   = "scheduling.run.ai"
	Version = "v2alpha2"
)

// Kind names and the plural resource of the PodGroup API, as in KAI's CRD
// (podgroups.scheduling.run.ai, kind PodGroup, listKind PodGroupList, shortName pg).
const (
	Kind     = "PodGroup"
	ListKind = "PodGroupList"
	Resource = "podgroups"
)

var (
	// SchemeGroupVersion is the group version of the PodGroup API (KAI groupversion_info.go
	// SchemeGroupVersion).
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

	// SchemeBuilder registers PodGroup and PodGroupList with a scheme (KAI registers the same two
	// types in podgroup_types.go init).
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the PodGroup API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// GroupResource returns the GroupResource of a resource of this API group, for apierrors and
// RESTMapper calls; GroupResource(Resource) is podgroups.scheduling.run.ai, the name of KAI's CRD
// (deployments/kai-scheduler/crds/scheduling.run.ai_podgroups.yaml).
func GroupResource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &PodGroup{}, &PodGroupList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
