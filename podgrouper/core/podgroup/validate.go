package podgroup

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// subGroupNamePattern is the pattern KAI's CRD puts on spec.subGroups[].name and .parent
// (podgroup_types.go, +kubebuilder:validation:Pattern).
var subGroupNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Validate reports every reason KAI would refuse pg, as a field.ErrorList with spec paths (empty
// when pg is valid). It checks:
//
// The API server's rule for every object (apimachinery ValidateAnnotationsSize): the annotations
// total at most 256 KiB. KAI's default metadata copies every annotation of the top owner, so a
// workload whose own annotations come near that makes a PodGroup the API server would refuse:
// Apply refuses it without sending it, and the error names the cause.
//
// The rules of KAI's CRD (podgroup_types.go markers): spec.minMember and spec.minSubGroup ≥ 1;
// subGroups[].minMember and .minSubGroup ≥ 0; subGroups[].name non-empty and, like .parent, a DNS
// label (`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`); spec.preemptibility empty, "preemptible" or
// "non-preemptible".
//
// The rules of KAI's validating webhook (pkg/apis/scheduling/v2alpha2/podgroup_webhook.go
// validatePodGroupSpec, validateSubGroups, validateSubGroupMinFields) that are errors on create:
//   - spec.minMember and spec.minSubGroup are mutually exclusive;
//   - subgroup names are unique; every parent names an existing subgroup; parents form no cycle
//     (when any of these fails, as in KAI, the per-subgroup rules below are not checked);
//   - per subgroup, minMember and minSubGroup are mutually exclusive;
//   - a leaf subgroup (no children) needs minMember and must not set minSubGroup;
//   - a mid-level subgroup (with children) must not set minMember. KAI's webhook downgrades this
//     one to a warning on update, for backward compatibility; Validate always reports it.
//
// One rule is stricter than KAI: a subgroup name longer than 63 characters is an error. KAI's
// CRD pattern has no length limit, but the name becomes the value of the pods'
// kai.scheduler/subgroup-name label, and label values are limited to 63 characters, so such a
// subgroup could never get a pod.
//
// KAI's warnings (a minSubGroup larger than the number of direct children) are reported by
// Warnings, not here.
func Validate(pg *v2alpha2.PodGroup) field.ErrorList {
	spec := &pg.Spec
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	if err := apivalidation.ValidateAnnotationsSize(pg.Annotations); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations"), "<too long>",
			err.Error()+" (bytes; KAI's default metadata copies every annotation of the workload to its PodGroup: the workload's own annotations are too large)"))
	}

	if spec.MinMember != nil && *spec.MinMember < 1 {
		errs = append(errs, field.Invalid(specPath.Child("minMember"), *spec.MinMember, "must be greater than or equal to 1"))
	}
	if spec.MinSubGroup != nil && *spec.MinSubGroup < 1 {
		errs = append(errs, field.Invalid(specPath.Child("minSubGroup"), *spec.MinSubGroup, "must be greater than or equal to 1"))
	}
	if spec.MinMember != nil && spec.MinSubGroup != nil {
		errs = append(errs, field.Invalid(specPath.Child("minSubGroup"), *spec.MinSubGroup,
			"minMember and minSubGroup are mutually exclusive: set minMember to schedule a fixed number of pods, or minSubGroup to require a number of child SubGroups, not both"))
	}
	switch spec.Preemptibility {
	case "", v2alpha2.Preemptible, v2alpha2.NonPreemptible:
	default:
		errs = append(errs, field.NotSupported(specPath.Child("preemptibility"), spec.Preemptibility,
			[]v2alpha2.Preemptibility{v2alpha2.Preemptible, v2alpha2.NonPreemptible}))
	}

	sgPath := specPath.Child("subGroups")
	for i := range spec.SubGroups {
		errs = append(errs, validateSubGroupFields(&spec.SubGroups[i], sgPath.Index(i))...)
	}

	children, graphErrs := subGroupChildren(spec.SubGroups, sgPath)
	errs = append(errs, graphErrs...)
	if len(graphErrs) > 0 {
		return errs
	}
	for i := range spec.SubGroups {
		errs = append(errs, validateSubGroupMins(&spec.SubGroups[i], children[spec.SubGroups[i].Name], sgPath.Index(i))...)
	}
	return errs
}

// validateSubGroupFields checks the CRD rules of one subgroup's own fields.
func validateSubGroupFields(sg *v2alpha2.SubGroup, path *field.Path) field.ErrorList {
	errs := validateSubGroupName(sg.Name, path.Child("name"), true)
	if sg.Parent != nil {
		errs = append(errs, validateSubGroupName(*sg.Parent, path.Child("parent"), false)...)
	}
	if sg.MinMember != nil && *sg.MinMember < 0 {
		errs = append(errs, field.Invalid(path.Child("minMember"), *sg.MinMember, "must be greater than or equal to 0"))
	}
	if sg.MinSubGroup != nil && *sg.MinSubGroup < 0 {
		errs = append(errs, field.Invalid(path.Child("minSubGroup"), *sg.MinSubGroup, "must be greater than or equal to 0"))
	}
	return errs
}

func validateSubGroupName(name string, path *field.Path, isName bool) field.ErrorList {
	if name == "" && isName {
		return field.ErrorList{field.Required(path, "a subgroup needs a name")}
	}
	var errs field.ErrorList
	if !subGroupNamePattern.MatchString(name) {
		errs = append(errs, field.Invalid(path, name, "must be a DNS label (^[a-z0-9]([-a-z0-9]*[a-z0-9])?$)"))
	}
	if isName && len(name) > validation.LabelValueMaxLength {
		errs = append(errs, field.TooLong(path, name, validation.LabelValueMaxLength))
	}
	return errs
}

// subGroupChildren checks the webhook's structural rules (KAI podgroup_webhook.go
// validateSubGroups, validateParent, detectCycle) and returns the subgroup tree: children by
// parent name.
func subGroupChildren(subGroups []v2alpha2.SubGroup, path *field.Path) (map[string][]string, field.ErrorList) {
	var errs field.ErrorList
	byName := map[string]*v2alpha2.SubGroup{}
	for i := range subGroups {
		sg := &subGroups[i]
		if _, dup := byName[sg.Name]; dup {
			errs = append(errs, field.Duplicate(path.Index(i).Child("name"), sg.Name))
			continue
		}
		byName[sg.Name] = sg
	}

	children := map[string][]string{}
	for i := range subGroups {
		sg := &subGroups[i]
		if sg.Parent == nil {
			continue
		}
		if _, ok := byName[*sg.Parent]; !ok {
			errs = append(errs, field.NotFound(path.Index(i).Child("parent"), *sg.Parent))
			continue
		}
		children[*sg.Parent] = append(children[*sg.Parent], sg.Name)
	}

	// A subgroup is on a cycle when following parents from it comes back to it. Report each
	// cycle once, at its first subgroup in spec order.
	reported := map[string]bool{}
	for i := range subGroups {
		start := subGroups[i].Name
		if reported[start] {
			continue
		}
		chain := []string{start}
		for cur := byName[start]; cur != nil && cur.Parent != nil && len(chain) <= len(subGroups); {
			parent := *cur.Parent
			if parent == start {
				chain = append(chain, parent)
				for _, n := range chain {
					reported[n] = true
				}
				errs = append(errs, field.Invalid(path.Index(i).Child("parent"), *subGroups[i].Parent,
					"cycle detected in subgroups: "+strings.Join(chain, " -> ")))
				break
			}
			if slices.Contains(chain, parent) {
				break // a cycle further up, reported from one of its own members
			}
			chain = append(chain, parent)
			cur = byName[parent]
		}
	}
	return children, errs
}

// validateSubGroupMins checks the webhook's minMember/minSubGroup rules for one subgroup (KAI
// podgroup_webhook.go validateSubGroupMinFields).
func validateSubGroupMins(sg *v2alpha2.SubGroup, children []string, path *field.Path) field.ErrorList {
	if sg.MinMember != nil && sg.MinSubGroup != nil {
		return field.ErrorList{field.Invalid(path.Child("minSubGroup"), *sg.MinSubGroup,
			fmt.Sprintf("subgroup %q: minMember and minSubGroup are mutually exclusive", sg.Name))}
	}
	var errs field.ErrorList
	if len(children) == 0 {
		if sg.MinSubGroup != nil {
			errs = append(errs, field.Invalid(path.Child("minSubGroup"), *sg.MinSubGroup,
				fmt.Sprintf("subgroup %q: minSubGroup cannot be set on a leaf SubGroup (no child SubGroups)", sg.Name)))
		}
		if sg.MinMember == nil {
			errs = append(errs, field.Required(path.Child("minMember"),
				fmt.Sprintf("subgroup %q: minMember is required on a leaf SubGroup", sg.Name)))
		}
		return errs
	}
	if sg.MinMember != nil {
		errs = append(errs, field.Invalid(path.Child("minMember"), *sg.MinMember,
			fmt.Sprintf("subgroup %q: minMember cannot be set on a mid-level SubGroup (has child SubGroups); use minSubGroup instead", sg.Name)))
	}
	return errs
}
