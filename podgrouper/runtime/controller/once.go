package controller

import (
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
)

// onceReporterSize bounds the pods remembered by an onceReporter.
const onceReporterSize = 4096

// onceReporter remembers which pods were told something about their owner references, so that a
// pod reconciled again (any change to it) is not told the same thing again. Bounded: the oldest
// pods are forgotten first.
type onceReporter struct {
	once sync.Once
	seen *lru.Cache
}

// first says whether this is the first report for the pod with these owner references (a pod
// whose references change is reported again).
func (o *onceReporter) first(pod types.UID, refs []metav1.OwnerReference) bool {
	o.once.Do(func() { o.seen = lru.New(onceReporterSize) })
	var b strings.Builder
	b.WriteString(string(pod))
	for _, r := range refs {
		b.WriteString("|")
		b.WriteString(string(r.UID))
	}
	return o.firstKey(b.String())
}

// firstKey says whether this is the first report under key.
func (o *onceReporter) firstKey(key string) bool {
	o.once.Do(func() { o.seen = lru.New(onceReporterSize) })
	if _, ok := o.seen.Get(key); ok {
		return false
	}
	o.seen.Add(key, struct{}{})
	return true
}
