package podview

import (
	"strconv"
	"strings"

	"k8s.io/utils/lru"
)

// recordShareSize bounds the slices remembered for sharing (each kind): the pods of one workload
// arrive together (created together, listed in name order), so the recent ones suffice. Worst
// case (every pod's labels differ) about 1,000 slices and their keys are kept beyond the pods.
const recordShareSize = 1024

// recordShare lets Records share equal label and annotation slices and equal owner structs
// (recordOwner: generateName, priority class, owner references): the pods of one workload (of one
// role) have equal ones, and a Record never changes them (readers get copies, Record.Pod), so
// one serves them all. Their strings are canonical already (intern); this saves the slices and
// structs themselves: about 250 bytes per pod of the scale benchmark's CustomJobs (2 labels, 2
// annotations, 1 owner reference). Safe for concurrent use (lru.Cache is).
type recordShare struct {
	pairs, owners *lru.Cache
}

var shared = recordShare{pairs: lru.New(recordShareSize), owners: lru.New(recordShareSize)}

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

// ownerOf returns a struct equal to o (its owner references deeply: the Controller and
// BlockOwnerDeletion values, not the pointers), a new one unless an equal one was made recently.
func (s recordShare) ownerOf(o recordOwner) *recordOwner {
	var b strings.Builder
	writeField(&b, o.generateName)
	writeField(&b, o.priorityClassName)
	writeField(&b, string(o.uidText))
	for _, r := range o.ownerReferences {
		writeField(&b, r.APIVersion)
		writeField(&b, r.Kind)
		writeField(&b, r.Name)
		writeField(&b, string(r.UID))
		writeField(&b, boolField(r.Controller))
		writeField(&b, boolField(r.BlockOwnerDeletion))
	}
	key := b.String()
	if v, ok := s.owners.Get(key); ok {
		return v.(*recordOwner)
	}
	out := &o
	s.owners.Add(key, out)
	return out
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
