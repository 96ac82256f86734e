package controller

import (
	"strings"
	"sync"

	"k8s.io/utils/lru"
)

// onceReporterSize bounds the pods remembered by an onceReporter.
const onceReporterSize = 4096

// onceReporter remembers which pods were told something, so that a pod reconciled again (any
// change to it) is not told the same thing again. Bounded: the oldest pods are forgotten first.
type onceReporter struct {
	once sync.Once
	seen *lru.Cache
}

// first says whether this is the first report under the key made of parts (the pod's UID first).
func (o *onceReporter) first(parts ...string) bool {
	o.once.Do(func() { o.seen = lru.New(onceReporterSize) })
	key := strings.Join(parts, "|")
	if _, ok := o.seen.Get(key); ok {
		return false
	}
	o.seen.Add(key, struct{}{})
	return true
}
