package podview

import (
	"math"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Owners is what tells that gangmap does not group a pod, read from its JSON without decoding
// the rest (DecodeOwners, Scanned.Owners).
type Owners struct {
	// Namespace is metadata.namespace ("" on a CREATE that leaves it to the request).
	Namespace string
	// SchedulerName is spec.schedulerName.
	SchedulerName string
	// References is metadata.ownerReferences.
	References []metav1.OwnerReference
}

// Scanned is a pod's JSON read once (ScanPod): its owners, and where the members the view keeps
// are, so that Pod decodes them without scanning the document again. It is for one admission:
// it keeps the JSON it was given, which must not change while the Scanned is in use.
type Scanned struct {
	raw []byte
	// fast: the scan found the document well-formed and every member the view reads given once;
	// otherwise Owners reports nothing and Pod decodes with DecodePod.
	fast bool
	// deleting: metadata.deletionTimestamp is set (Owners leaves the pod to DecodePod, which
	// parses the time).
	deleting bool
	// hasMetadata: metadata is an object (not absent, not null).
	hasMetadata bool
	// owners' strings are views of raw (Owners copies them).
	owners Owners
	marks  [maxMarks]mark
	nMarks int
}

// mark is where a member the view reads starts (its name), and the object it is a member of.
type mark struct {
	in  level
	pos int32
}

type level uint8

const (
	levelTop level = iota
	levelMeta
	levelSpec
	levelStatus
)

// maxMarks bounds the members ScanPod marks: each member the view reads is marked once (a
// repeated one declines the scan), 2 at the top, 10 in metadata, 8 in spec, 1 in status.
const maxMarks = 21

// ScanPod reads a pod's JSON (an admission request's object) once, with decodeFast's validating
// scanner: it checks the whole document is well-formed, reads the namespace, scheduler name and
// owner references (Owners), and marks where each other member the view keeps starts (Pod
// decodes only those, from their marks). Nothing is copied until Owners or Pod is called. A
// document the scanner does not handle for sure (decodeFast's reasons, a member the view reads
// given twice) is left to DecodePod: Owners reports false and Pod decodes with DecodePod.
// FuzzDecodeFast checks Pod against DecodePod and FuzzDecodeOwners checks Owners against
// DecodePod on any input.
func ScanPod(raw []byte) Scanned {
	p := Scanned{raw: raw}
	if len(raw) == 0 || len(raw) > math.MaxInt32 { // marks are int32 offsets
		return p
	}
	// A view of raw, not a copy: nothing read escapes uncopied (Owners copies, Pod copies raw).
	s := &scanner{raw: raw, str: unsafe.String(&raw[0], len(raw))}
	var seen uint16
	ok := s.object(func(k string) bool {
		switch k {
		case "apiVersion":
			return once(&seen, 1) && p.mark(levelTop, s.keyAt) && s.skip(0)
		case "kind":
			return once(&seen, 2) && p.mark(levelTop, s.keyAt) && s.skip(0)
		case "metadata":
			if !once(&seen, 4) {
				return false
			}
			if s.null() {
				return true
			}
			p.hasMetadata = true
			return s.scanMeta(&p)
		case "spec":
			return once(&seen, 8) && (s.null() || s.scanMembers(&p, levelSpec, specBits))
		case "status":
			return once(&seen, 16) && (s.null() || s.scanMembers(&p, levelStatus, statusBits))
		}
		return s.skip(0)
	})
	s.ws()
	p.fast = ok && s.i == len(raw)
	return p
}

func (p *Scanned) mark(in level, pos int) bool {
	if p.nMarks == len(p.marks) {
		return false
	}
	p.marks[p.nMarks] = mark{in, int32(pos)}
	p.nMarks++
	return true
}

// The members of spec and status the view reads, by the bit the decoder's once gives them.
var (
	specBits = map[string]uint16{"schedulerName": 1, "priorityClassName": 2, "nodeName": 4, "overhead": 8,
		"resourceClaims": 16, "resources": 32, "containers": 64, "initContainers": 128}
	statusBits = map[string]uint16{"phase": 1}
	metaBits   = map[string]uint16{"name": 1, "generateName": 2, "namespace": 4, "uid": 8, "resourceVersion": 16,
		"creationTimestamp": 32, "deletionTimestamp": 64, "labels": 128, "annotations": 256, "ownerReferences": 512}
)

// scanMembers marks the members of an object (spec or status) the view reads and skips every
// value but spec.schedulerName, which it reads.
func (s *scanner) scanMembers(p *Scanned, in level, bits map[string]uint16) bool {
	var seen uint16
	return s.object(func(k string) bool {
		bit, ok := bits[k]
		if !ok {
			return s.skip(0)
		}
		if !once(&seen, bit) || !p.mark(in, s.keyAt) {
			return false
		}
		if in == levelSpec && k == "schedulerName" {
			return s.textInto(&p.owners.SchedulerName)
		}
		return s.skip(0)
	})
}

// scanMeta marks the members of metadata the view reads, reads the namespace and owner
// references, and notes a deletionTimestamp.
func (s *scanner) scanMeta(p *Scanned) bool {
	var seen uint16
	return s.object(func(k string) bool {
		bit, ok := metaBits[k]
		if !ok {
			return s.skip(0)
		}
		if !once(&seen, bit) || !p.mark(levelMeta, s.keyAt) {
			return false
		}
		switch k {
		case "namespace":
			return s.textInto(&p.owners.Namespace)
		case "ownerReferences":
			return s.ownerReferences(&p.owners.References)
		case "deletionTimestamp":
			if s.null() {
				return true
			}
			p.deleting = true
		}
		return s.skip(0)
	})
}

// Owners is the pod's namespace, scheduler name and owner references, copied (they keep nothing
// of the JSON). ok is false when the scan cannot tell for sure that DecodePod would read the same
// (the scan declined, or the pod has a deletionTimestamp, which DecodePod parses): the caller
// decodes the pod instead. For a document DecodePod refuses only for a field it keeps having the
// wrong type (never one the API server sends, which has decoded and re-encoded the pod), Owners
// may still report ok.
func (p *Scanned) Owners() (Owners, bool) {
	if !p.fast || p.deleting {
		return Owners{}, false
	}
	o := &p.owners // its strings become copies (cloning a copy again is harmless)
	o.Namespace, o.SchedulerName = strings.Clone(o.Namespace), strings.Clone(o.SchedulerName)
	for i := range o.References {
		r := &o.References[i]
		r.APIVersion, r.Kind, r.Name = strings.Clone(r.APIVersion), strings.Clone(r.Kind), strings.Clone(r.Name)
		r.UID = types.UID(strings.Clone(string(r.UID)))
	}
	return *o, true
}

// Pod decodes the pod into the view, as DecodePod does and with the same result: the marked
// members are decoded from one copy of the JSON (the decoded strings share it); the rest of the
// document is not read again. When the scan declined, or a marked value is not what the view
// takes (a wrong type, an escape), it decodes with DecodePod.
//
// The pod's identity (namespace, name, generateName, UID) and owner references are then copied
// out of that copy (detach): a decision keeps them beyond the admission (the owner walker's
// cache is keyed by the pod's namespace and its owner's UID and keeps the reference), and a
// substring kept there would keep the whole JSON of the pod alive (1 to 3 KB per cached owner;
// the 20,000-pod scale run showed 4 MB of such copies). Labels and annotations still share it:
// nothing keeps them past the decision.
func (p *Scanned) Pod() (*Decoded, error) {
	if !p.fast {
		return DecodePod(p.raw)
	}
	in, ok := p.decodeMarks()
	if !ok {
		return DecodePod(p.raw)
	}
	d := fromJSON(in)
	detach(d.Pod)
	return d, nil
}

// detach copies the pod's namespace, name, generateName, UID and owner references (a new slice)
// into strings of their own.
func detach(pod *corev1.Pod) {
	m := &pod.ObjectMeta
	m.Namespace, m.Name, m.GenerateName = strings.Clone(m.Namespace), strings.Clone(m.Name), strings.Clone(m.GenerateName)
	m.UID = types.UID(strings.Clone(string(m.UID)))
	if m.OwnerReferences == nil {
		return
	}
	refs := make([]metav1.OwnerReference, len(m.OwnerReferences))
	for i, r := range m.OwnerReferences {
		r.APIVersion, r.Kind, r.Name = strings.Clone(r.APIVersion), strings.Clone(r.Kind), strings.Clone(r.Name)
		r.UID = types.UID(strings.Clone(string(r.UID)))
		refs[i] = r
	}
	m.OwnerReferences = refs
}

// decodeMarks decodes each marked member with decodeFast's reader of its object.
func (p *Scanned) decodeMarks() (*podJSON, bool) {
	s := &scanner{raw: p.raw, str: string(p.raw)}
	in := &podJSON{}
	if p.hasMetadata {
		in.Metadata = &objectMetaJSON{}
	}
	var seenTop, seenMeta, seenSpec, seenStatus uint16
	for _, m := range p.marks[:p.nMarks] {
		s.i = int(m.pos)
		k, ok := s.key()
		if !ok || !s.is(':') {
			return nil, false
		}
		switch m.in {
		case levelTop:
			ok = s.topMember(in, &seenTop, k)
		case levelMeta:
			ok = s.metaMember(in.Metadata, &seenMeta, k)
		case levelSpec:
			ok = s.specMember(&in.Spec, &seenSpec, k)
		case levelStatus:
			ok = s.statusMember(in, &seenStatus, k)
		}
		if !ok {
			return nil, false
		}
	}
	return in, true
}

// DecodeOwners is ScanPod(raw).Owners(): a pod's namespace, scheduler name and owner
// references, read without decoding the rest (skipped members are checked well-formed, never
// copied), so the admission webhook can tell a pod of a kind gangmap does not group without
// decoding the pod. FuzzDecodeOwners checks it agrees with DecodePod.
func DecodeOwners(raw []byte) (Owners, bool) {
	p := ScanPod(raw)
	return p.Owners()
}
