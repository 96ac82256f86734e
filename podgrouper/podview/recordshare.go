package podview

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/lru"
)

// recordShareSize bounds the slices remembered for sharing (each kind): the pods of one workload
// arrive together (created together, listed in name order), so the recent ones suffice. Worst
// case (every pod's labels differ) about 1,000 slices and their keys are kept beyond the pods.
const recordShareSize = 1024

// recordShare lets Records share equal label, annotation and owner-reference slices: the pods of
// one workload (of one role) have equal ones, and a Record never changes them (readers get
// copies, Record.Pod), so one slice serves them all. Their strings are canonical already (intern);
// this saves the slices themselves: about 200 bytes per pod of the scale benchmark's CustomJobs
// (2 labels, 2 annotations, 1 owner reference). Safe for concurrent use (lru.Cache is).
type recordShare struct {
	pairs, refs *lru.Cache
}

var shared = recordShare{pairs: lru.New(recordShareSize), refs: lru.New(recordShareSize)}

// pairsOf returns a slice equal to kv, kv itself unless an equal one was made recently.
func (s recordShare) pairsOf(kv []string) []string {
	if len(kv) == 0 {
		return kv
	}
	var b strings.Builder
	for _, v := range kv {
		writeField(&b, v)
	}
	key := b.String()
	if v, ok := s.pairs.Get(key); ok {
		return v.([]string)
	}
	s.pairs.Add(key, kv)
	return kv
}

// refsOf returns a slice equal to refs (deeply: the Controller and BlockOwnerDeletion values, not
// the pointers), refs itself unless an equal one was made recently.
func (s recordShare) refsOf(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return refs
	}
	var b strings.Builder
	for _, r := range refs {
		writeField(&b, r.APIVersion)
		writeField(&b, r.Kind)
		writeField(&b, r.Name)
		writeField(&b, string(r.UID))
		writeField(&b, boolField(r.Controller))
		writeField(&b, boolField(r.BlockOwnerDeletion))
	}
	key := b.String()
	if v, ok := s.refs.Get(key); ok {
		return v.([]metav1.OwnerReference)
	}
	s.refs.Add(key, refs)
	return refs
}

// writeField writes s length-prefixed, so that no two lists of strings have the same key.
func writeField(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}

func boolField(p *bool) string {
	switch {
	case p == nil:
		return "-"
	case *p:
		return "t"
	default:
		return "f"
	}
}
