package podview

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// decodeFast fills podJSON from a pod's JSON in one pass of a validating scanner, without
// reflection, as sigs.k8s.io/json's case-sensitive decoding would. ok is false for anything it
// does not handle the same way for sure: malformed JSON, a member of the view named with an
// escape or given twice, a string of the view with an escape or invalid UTF-8, a null label or
// annotation value, a value of the wrong type, nesting deeper than maxSkipDepth. DecodePod then
// decodes with sigs.k8s.io/json. FuzzDecodeFast checks both decodings agree on every input
// decodeFast accepts. Values without a fixed JSON shape of their own (quantities, timestamps,
// resource claims) are decoded by their own UnmarshalJSON or by sigs.k8s.io/json, as the full
// decoding does.
func decodeFast(raw []byte) (*podJSON, bool) {
	s := &scanner{raw: raw, str: string(raw)}
	in := &podJSON{}
	var seen uint16
	ok := s.object(func(k string) bool { return s.topMember(in, &seen, k) })
	s.ws()
	return in, ok && s.i == len(raw)
}

// topMember reads the pod's member k into in (seen: the members read so far).
func (s *scanner) topMember(in *podJSON, seen *uint16, k string) bool {
	switch k {
	case "apiVersion":
		return once(seen, 1) && s.textInto(&in.APIVersion)
	case "kind":
		return once(seen, 2) && s.textInto(&in.Kind)
	case "metadata":
		if !once(seen, 4) {
			return false
		}
		if s.null() {
			return true
		}
		in.Metadata = &objectMetaJSON{}
		return s.meta(in.Metadata)
	case "spec":
		return once(seen, 8) && (s.null() || s.spec(&in.Spec))
	case "status":
		return once(seen, 16) && (s.null() || s.status(in))
	}
	return s.skip(0)
}

func (s *scanner) textInto(dst *string) bool {
	v, ok := s.text()
	*dst = v
	return ok
}

func (s *scanner) status(in *podJSON) bool {
	var seen uint16
	return s.object(func(k string) bool { return s.statusMember(in, &seen, k) })
}

func (s *scanner) statusMember(in *podJSON, seen *uint16, k string) bool {
	if k == "phase" {
		return once(seen, 1) && s.textInto((*string)(&in.Status.Phase))
	}
	return s.skip(0)
}

func (s *scanner) meta(m *objectMetaJSON) bool {
	var seen uint16
	return s.object(func(k string) bool { return s.metaMember(m, &seen, k) })
}

func (s *scanner) metaMember(m *objectMetaJSON, seen *uint16, k string) bool {
	switch k {
	case "name":
		return once(seen, 1) && s.textInto(&m.Name)
	case "generateName":
		return once(seen, 2) && s.textInto(&m.GenerateName)
	case "namespace":
		return once(seen, 4) && s.textInto(&m.Namespace)
	case "uid":
		return once(seen, 8) && s.textInto((*string)(&m.UID))
	case "resourceVersion":
		return once(seen, 16) && s.textInto(&m.ResourceVersion)
	case "creationTimestamp":
		return once(seen, 32) && s.unmarshaler(&m.CreationTimestamp)
	case "deletionTimestamp":
		if !once(seen, 64) {
			return false
		}
		if s.null() {
			return true
		}
		m.DeletionTimestamp = &metav1.Time{}
		return s.unmarshaler(m.DeletionTimestamp)
	case "labels":
		return once(seen, 128) && s.stringMap(&m.Labels)
	case "annotations":
		return once(seen, 256) && s.stringMap(&m.Annotations)
	case "ownerReferences":
		return once(seen, 512) && s.ownerReferences(&m.OwnerReferences)
	}
	return s.skip(0)
}

// unmarshaler hands the value's bytes to its UnmarshalJSON, as encoding/json does (null too).
func (s *scanner) unmarshaler(u interface{ UnmarshalJSON([]byte) error }) bool {
	tok, ok := s.token()
	return ok && u.UnmarshalJSON(tok) == nil
}

// decodeToken decodes the value with sigs.k8s.io/json, for rare values of a rich shape.
func (s *scanner) decodeToken(dst any) bool {
	tok, ok := s.token()
	return ok && sigsjson.UnmarshalCaseSensitivePreserveInts(tok, dst) == nil
}

type keyValue struct{ k, v string }

// stringMap reads an object of string values (null: nil; {}: an empty map). The map is sized
// once from a stack buffer of the members.
func (s *scanner) stringMap(dst *map[string]string) bool {
	if s.null() {
		return true
	}
	var buf [32]keyValue
	kvs := buf[:0]
	ok := s.object(func(k string) bool {
		if s.null() {
			return false
		}
		v, ok := s.text()
		kvs = append(kvs, keyValue{k, v})
		return ok
	})
	if !ok {
		return false
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.k] = kv.v
	}
	*dst = m
	return true
}

func (s *scanner) ownerReferences(dst *[]metav1.OwnerReference) bool {
	if s.null() {
		return true
	}
	refs := []metav1.OwnerReference{}
	ok := s.array(func() bool {
		var r metav1.OwnerReference
		var seen uint16
		ok := s.object(func(k string) bool {
			switch k {
			case "apiVersion":
				return once(&seen, 1) && s.textInto(&r.APIVersion)
			case "kind":
				return once(&seen, 2) && s.textInto(&r.Kind)
			case "name":
				return once(&seen, 4) && s.textInto(&r.Name)
			case "uid":
				return once(&seen, 8) && s.textInto((*string)(&r.UID))
			case "controller":
				return once(&seen, 16) && s.boolPtr(&r.Controller)
			case "blockOwnerDeletion":
				return once(&seen, 32) && s.boolPtr(&r.BlockOwnerDeletion)
			}
			return s.skip(0)
		})
		refs = append(refs, r)
		return ok
	})
	*dst = refs
	return ok
}

func (s *scanner) boolPtr(dst **bool) bool {
	switch {
	case s.null():
		return true
	case s.literal("true"):
		v := true
		*dst = &v
	case s.literal("false"):
		v := false
		*dst = &v
	default:
		return false
	}
	return true
}

func (s *scanner) spec(p *podSpecJSON) bool {
	var seen uint16
	return s.object(func(k string) bool { return s.specMember(p, &seen, k) })
}

func (s *scanner) specMember(p *podSpecJSON, seen *uint16, k string) bool {
	switch k {
	case "schedulerName":
		return once(seen, 1) && s.textInto(&p.SchedulerName)
	case "priorityClassName":
		return once(seen, 2) && s.textInto(&p.PriorityClassName)
	case "nodeName":
		return once(seen, 4) && s.textInto(&p.NodeName)
	case "overhead":
		return once(seen, 8) && s.resourceList(&p.Overhead)
	case "resourceClaims":
		return once(seen, 16) && s.decodeToken(&p.ResourceClaims)
	case "resources":
		if !once(seen, 32) {
			return false
		}
		if s.null() {
			return true
		}
		p.Resources = &corev1.ResourceRequirements{}
		return s.requirements(p.Resources)
	case "containers":
		return once(seen, 64) && s.containers(&p.Containers)
	case "initContainers":
		return once(seen, 128) && s.containers(&p.InitContainers)
	}
	return s.skip(0)
}

func (s *scanner) containers(dst *[]containerJSON) bool {
	if s.null() {
		return true
	}
	cs := []containerJSON{}
	ok := s.array(func() bool {
		var c containerJSON
		var seen uint16
		ok := s.object(func(k string) bool {
			switch k {
			case "name":
				return once(&seen, 1) && s.textInto(&c.Name)
			case "resources":
				return once(&seen, 2) && (s.null() || s.requirements(&c.Resources))
			case "restartPolicy":
				if !once(&seen, 4) {
					return false
				}
				if s.null() {
					return true
				}
				v, ok := s.text()
				c.RestartPolicy = (*corev1.ContainerRestartPolicy)(&v)
				return ok
			}
			return s.skip(0)
		})
		cs = append(cs, c)
		return ok
	})
	*dst = cs
	return ok
}

func (s *scanner) requirements(r *corev1.ResourceRequirements) bool {
	var seen uint16
	return s.object(func(k string) bool {
		switch k {
		case "limits":
			return once(&seen, 1) && s.resourceList(&r.Limits)
		case "requests":
			return once(&seen, 2) && s.resourceList(&r.Requests)
		case "claims":
			return once(&seen, 4) && s.decodeToken(&r.Claims)
		}
		return s.skip(0)
	})
}

// resourceList reads a map of quantities; each value goes to Quantity.UnmarshalJSON as it is.
func (s *scanner) resourceList(dst *corev1.ResourceList) bool {
	if s.null() {
		return true
	}
	l := corev1.ResourceList{}
	ok := s.object(func(k string) bool {
		var q resource.Quantity
		if !s.unmarshaler(&q) {
			return false
		}
		l[corev1.ResourceName(k)] = q
		return true
	})
	*dst = l
	return ok
}
