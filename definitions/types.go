// Package definitions holds the Workload Map definition model (the Karta resource,
// run.ai/v1alpha1, cluster scoped), and loads, validates and compiles definitions.
//
// The Go types mirror the published format field for field (json names as upstream), so a
// definition written for the upstream catalog loads here unchanged. gangmap's own additions live
// in one place, Spec.Gangmap (json "gangmap"), because the upstream Karta CRD prunes unknown
// fields: see Extensions.
//
// Expression fields have type Expr. In the published shape an Expr is a jq string; in the
// forward shape it is an accessor object {expression: <CEL>}. Both shapes are accepted wherever
// an Expr appears. Object-side expressions (spec, scale, status, instance ids, suspend) run
// against the workload object; pod-side expressions (pod selectors, grouping keys, filters) run
// against the pod (upstream's convention).
package definitions

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// APIVersion and Kind of the Workload Map definition resource.
const (
	Group      = "run.ai"
	Version    = "v1alpha1"
	APIVersion = Group + "/" + Version
	Kind       = "Karta"
	// Resource is the plural resource name of Karta objects (kartas.run.ai).
	Resource = "kartas"
)

// GroupVersionResource is the Karta resource, for dynamic clients.
var GroupVersionResource = schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}

// Karta is one Workload Map definition: how a workload kind is built from components, where its
// pod templates and replica counts are, how its status maps to a common vocabulary, and how it is
// gang scheduled.
type Karta struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       KartaSpec  `json:"spec"`
}

// ObjectMeta is the subset of Kubernetes object metadata a definition uses.
type ObjectMeta struct {
	Name            string            `json:"name,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
	UID             string            `json:"uid,omitempty"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Generation      int64             `json:"generation,omitempty"`
}

// KartaSpec is spec of a Karta.
type KartaSpec struct {
	// StructureDefinition describes the component tree. Required.
	StructureDefinition StructureDefinition `json:"structureDefinition"`
	// OptimizationInstructions holds the gang scheduling hints.
	OptimizationInstructions OptimizationInstructions `json:"optimizationInstructions,omitzero"`
	// Variables (forward CEL shape) are CEL expressions over the workload object, evaluated once
	// per workload and bound as variables.<name> in every other CEL expression.
	Variables []Variable `json:"variables,omitempty"`
	// Gangmap holds gangmap's additions to the format. See Extensions.
	Gangmap *Extensions `json:"gangmap,omitempty"`
}

// Variable is a named CEL expression over the workload object (forward shape, spec.variables).
type Variable struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// StructureDefinition is the component tree of a workload kind.
type StructureDefinition struct {
	RootComponent   ComponentDefinition   `json:"rootComponent"`
	ChildComponents []ComponentDefinition `json:"childComponents,omitempty"`
	// AdditionalChildKinds lists kinds the workload creates that no component names; upstream uses
	// them for RBAC.
	AdditionalChildKinds []GroupVersionKind `json:"additionalChildKinds,omitempty"`
}

// GroupVersionKind names a Kubernetes kind. An empty group is the core group.
type GroupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// GVK converts to the apimachinery type.
func (g GroupVersionKind) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: g.Group, Version: g.Version, Kind: g.Kind}
}

// String renders the kind as Kind.group/version (JobSet.jobset.x-k8s.io/v1alpha2; Kind/version
// for the core group), the form kubectl users read, not apimachinery's "group/version, Kind=K".
func (g GroupVersionKind) String() string { return KindString(g.GVK()) }

// KindString renders gvk as Kind.group/version (Kind/version for the core group).
func KindString(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Kind + "/" + gvk.Version
	}
	return gvk.Kind + "." + gvk.Group + "/" + gvk.Version
}

// ComponentDefinition is one node of the component tree: the root (the workload kind itself) or
// a child (a role, or a virtual grouping level when it has no kind).
type ComponentDefinition struct {
	// Name is unique in the definition; gangmap uses it in sub-group names, so it must be a
	// DNS-1123 label.
	Name string `json:"name"`
	// Kind is the Kubernetes kind of the component's objects; nil on a virtual level.
	Kind *GroupVersionKind `json:"kind,omitempty"`
	// OwnerRef names the parent component; absent on the root, required on children.
	OwnerRef *string `json:"ownerRef,omitempty"`
	// SpecDefinition says where the component's pod template is (one of three shapes).
	SpecDefinition *SpecDefinition `json:"specDefinition,omitempty"`
	// ScaleDefinition says where the component's replica counts are.
	ScaleDefinition *ScaleDefinition `json:"scaleDefinition,omitempty"`
	// StatusDefinition maps native status to the common vocabulary (root only).
	StatusDefinition *StatusDefinition `json:"statusDefinition,omitempty"`
	// SuspendDefinition says how to suspend and resume the workload.
	SuspendDefinition *SuspendDefinition `json:"suspendDefinition,omitempty"`
	// InstanceIDPath yields the ids of the component's instances when one definition holds a list
	// or map of pod specs (JobSet replicatedJobs[].name).
	InstanceIDPath Expr `json:"instanceIdPath,omitzero"`
	// PodSelector says which pods belong to the component, its instance and its replica.
	PodSelector *PodSelector `json:"podSelector,omitempty"`
}

// SpecDefinition locates a component's pod template: exactly one of PodTemplateSpecPath,
// PodSpecPath (with optional MetadataPath) or FragmentedPodSpecDefinition.
type SpecDefinition struct {
	PodTemplateSpecPath         Expr                         `json:"podTemplateSpecPath,omitzero"`
	PodSpecPath                 Expr                         `json:"podSpecPath,omitzero"`
	MetadataPath                Expr                         `json:"metadataPath,omitzero"`
	FragmentedPodSpecDefinition *FragmentedPodSpecDefinition `json:"fragmentedPodSpecDefinition,omitempty"`
}

// FragmentedPodSpecDefinition locates the pieces of a pod spec a workload keeps apart
// (SparkApplication driver and executor, NIMService). Each path is optional.
type FragmentedPodSpecDefinition struct {
	SchedulerNamePath     Expr `json:"schedulerNamePath,omitzero"`
	LabelsPath            Expr `json:"labelsPath,omitzero"`
	AnnotationsPath       Expr `json:"annotationsPath,omitzero"`
	ResourcesPath         Expr `json:"resourcesPath,omitzero"`
	ResourceClaimsPath    Expr `json:"resourceClaimsPath,omitzero"`
	PodAffinityPath       Expr `json:"podAffinityPath,omitzero"`
	NodeAffinityPath      Expr `json:"nodeAffinityPath,omitzero"`
	ContainersPath        Expr `json:"containersPath,omitzero"`
	ContainerPath         Expr `json:"containerPath,omitzero"`
	PriorityClassNamePath Expr `json:"priorityClassNamePath,omitzero"`
	ImagePath             Expr `json:"imagePath,omitzero"`
}

// ScaleDefinition locates a component's replica counts. Values may be numbers or numeric strings
// (Knative's min-scale annotation "2"). Counts follow the published convention: the number of
// units at this component's level, across the whole workload.
type ScaleDefinition struct {
	ReplicasPath    Expr `json:"replicasPath,omitzero"`
	MinReplicasPath Expr `json:"minReplicasPath,omitzero"`
	MaxReplicasPath Expr `json:"maxReplicasPath,omitzero"`
}

// StatusDefinition maps a workload's native status to the common vocabulary.
type StatusDefinition struct {
	PhaseDefinition      *PhaseDefinition      `json:"phaseDefinition,omitempty"`
	ConditionsDefinition *ConditionsDefinition `json:"conditionsDefinition,omitempty"`
	StatusMappings       StatusMappings        `json:"statusMappings"`
}

// PhaseDefinition locates a phase string.
type PhaseDefinition struct {
	Path Expr `json:"path"`
}

// ConditionsDefinition locates a list of conditions and names their fields.
type ConditionsDefinition struct {
	Path Expr `json:"path"`
	// TypeFieldName defaults to "type"; StatusFieldName to "status". Matching on a reason needs
	// ReasonFieldName.
	TypeFieldName    string `json:"typeFieldName,omitempty"`
	StatusFieldName  string `json:"statusFieldName,omitempty"`
	MessageFieldName string `json:"messageFieldName,omitempty"`
	ReasonFieldName  string `json:"reasonFieldName,omitempty"`
}

// StatusMappings lists, per common status, the matchers that select it. Matchers under one status
// are ORed; the clauses inside one matcher are ANDed; several statuses may match at once.
type StatusMappings struct {
	Initializing []StatusMatcher `json:"initializing,omitempty"`
	Running      []StatusMatcher `json:"running,omitempty"`
	Completed    []StatusMatcher `json:"completed,omitempty"`
	Failed       []StatusMatcher `json:"failed,omitempty"`
	Degraded     []StatusMatcher `json:"degraded,omitempty"`
	Suspended    []StatusMatcher `json:"suspended,omitempty"`
	Suspending   []StatusMatcher `json:"suspending,omitempty"`
	Resuming     []StatusMatcher `json:"resuming,omitempty"`
}

// StatusMatcher is one way a status can match: all of its set clauses must hold.
type StatusMatcher struct {
	ByPhase      string             `json:"byPhase,omitempty"`
	ByConditions []ConditionMatcher `json:"byConditions,omitempty"`
	ByExpression *ExpressionMatcher `json:"byExpression,omitempty"`
}

// ConditionMatcher matches one condition by type and, optionally, status and reason.
type ConditionMatcher struct {
	Type   string `json:"type"`
	Status string `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ExpressionMatcher matches when an expression over the workload holds. In the published shape
// Expression is jq, run as `(<expr>) | tostring`, and matches when its first result equals
// ExpectedResult. Without ExpectedResult (the forward shape) Expression is a CEL boolean.
type ExpressionMatcher struct {
	Expression     string  `json:"expression"`
	ExpectedResult *string `json:"expectedResult,omitempty"`
}

// SuspendDefinition says how to suspend and resume a workload: each action assigns a JSON value
// (Value is JSON text such as "true") at a jq path.
type SuspendDefinition struct {
	SuspendActions []SuspendAction `json:"suspendActions,omitempty"`
	ResumeActions  []SuspendAction `json:"resumeActions,omitempty"`
}

// SuspendAction assigns Value (JSON text) at Path (a jq path).
type SuspendAction struct {
	Path  Expr   `json:"path"`
	Value string `json:"value"`
}

// PodSelector says which pods belong to a component (type), to which of its instances, and to
// which replica of a replicated sub-structure (LWS group). Expressions run against the pod.
type PodSelector struct {
	ComponentTypeSelector     *ComponentTypeSelector     `json:"componentTypeSelector,omitempty"`
	ComponentInstanceSelector *ComponentInstanceSelector `json:"componentInstanceSelector,omitempty"`
	ReplicaSelector           *ReplicaSelector           `json:"replicaSelector,omitempty"`
}

// ComponentTypeSelector matches a pod to a component: KeyPath's result equals Value (when set) or
// exists (when not), and every MatchLabels entry equals the pod's label.
type ComponentTypeSelector struct {
	KeyPath     Expr              `json:"keyPath,omitzero"`
	Value       *string           `json:"value,omitempty"`
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// ComponentInstanceSelector yields the instance id of a pod (compared with InstanceIDPath ids).
type ComponentInstanceSelector struct {
	IDPath Expr `json:"idPath"`
}

// ReplicaSelector yields the replica index of a pod inside a replicated sub-structure.
type ReplicaSelector struct {
	KeyPath Expr `json:"keyPath"`
}

// OptimizationInstructions holds scheduling hints.
type OptimizationInstructions struct {
	GangScheduling *GangSchedulingInstruction `json:"gangScheduling,omitempty"`
}

// GangSchedulingInstruction is one of two forms: PodGroup (current, KAI-native) or PodGroups
// (deprecated alpha form, still used by every published catalog definition). PodGroup wins when
// both are set, as in KAI.
type GangSchedulingInstruction struct {
	PodGroups []PodGroupDefinition       `json:"podGroups,omitempty"`
	PodGroup  *PodGroupComponentsMapping `json:"podGroup,omitempty"`
}

// PodGroupDefinition is the alpha form: a gang made of member components, split by grouping keys
// evaluated on each pod.
type PodGroupDefinition struct {
	Name    string                     `json:"name"`
	Members []PodGroupMemberDefinition `json:"members"`
}

// PodGroupMemberDefinition is one member of an alpha gang. GroupByKeyPaths (jq on the pod) must each
// yield one non-empty value; Filters (jq on the pod) are ANDed. GroupByExpressions is the forward
// CEL replacement of both.
type PodGroupMemberDefinition struct {
	ComponentName      string `json:"componentName"`
	GroupByKeyPaths    []Expr `json:"groupByKeyPaths,omitempty"`
	Filters            []Expr `json:"filters,omitempty"`
	GroupByExpressions []Expr `json:"groupByExpressions,omitempty"`
}

// PodGroupComponentsMapping is the current form: one PodGroup named Name, with one sub-group per
// listed component.
type PodGroupComponentsMapping struct {
	Name      string              `json:"name"`
	SubGroups []SubGroupMapping   `json:"subGroups,omitempty"`
	Topology  *TopologyConstraint `json:"topology,omitempty"`
}

// SubGroupMapping maps a component to a sub-group.
type SubGroupMapping struct {
	ComponentName string              `json:"componentName"`
	Topology      *TopologyConstraint `json:"topology,omitempty"`
}

// TopologyConstraint names a KAI Topology and the levels to place a gang on.
type TopologyConstraint struct {
	TopologyName           string `json:"topologyName"`
	PreferredTopologyLevel string `json:"preferredTopologyLevel,omitempty"`
	RequiredTopologyLevel  string `json:"requiredTopologyLevel,omitempty"`
}

// Expr is a definition expression. Exactly one of JQ (the published shape: a YAML string) or CEL
// (the forward shape: an accessor object {expression: <CEL>}) is set; the zero Expr means "not
// set".
type Expr struct {
	JQ  string
	CEL string
}

// JQExpr returns a jq Expr.
func JQExpr(src string) Expr { return Expr{JQ: src} }

// CELExpr returns a CEL Expr.
func CELExpr(src string) Expr { return Expr{CEL: src} }

// IsZero reports whether the expression is unset.
func (e Expr) IsZero() bool { return e.JQ == "" && e.CEL == "" }

// String renders the expression for messages: the jq text, or "cel:" and the CEL text.
func (e Expr) String() string {
	if e.CEL != "" {
		return "cel:" + e.CEL
	}
	return e.JQ
}

type celAccessor struct {
	Expression string `json:"expression"`
}

// UnmarshalJSON accepts a JSON string (jq), an object {"expression": "..."} (CEL) or null.
// Any other shape is an error that says what was expected.
func (e *Expr) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*e = Expr{}
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*e = Expr{JQ: s}
		return nil
	case len(b) > 0 && b[0] == '{':
		var a celAccessor
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return fmt.Errorf("expected a jq string or an accessor object {expression: <CEL>}: %w", err)
		}
		*e = Expr{CEL: a.Expression}
		return nil
	}
	return fmt.Errorf("expected a jq string or an accessor object {expression: <CEL>}, got %s", truncate(string(b), 40))
}

// MarshalJSON writes the shape the expression was given in.
func (e Expr) MarshalJSON() ([]byte, error) {
	if e.CEL != "" {
		return json.Marshal(celAccessor{Expression: e.CEL})
	}
	return json.Marshal(e.JQ)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
