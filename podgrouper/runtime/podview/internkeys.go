package podview

import (
	"hash/maphash"
	"unsafe"
)

// wellKnownKeys are the keys of an object's root and metadata maps that every workload has (or
// may have), as one static string each: an informer decodes each object's keys into strings of
// its own (about 190 bytes per workload for the root's and metadata's), and Interner.Transform
// makes them these.
var wellKnownKeys = func() map[string]string {
	out := map[string]string{}
	for _, k := range []string{"apiVersion", "kind", "metadata", "spec", "status",
		"name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
		"deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers"} {
		out[k] = k
	}
	return out
}()

// sharedValueKeys are the root's and metadata's keys whose string values many workloads share
// (their group, version and kind, their namespace, and the creation time of workloads created in
// the same second): Interner.Transform stores each such value once, boxed, as the map's value (a
// string in a map[string]any is a string header boxed in its own allocation besides its bytes).
var sharedValueKeys = map[string]bool{"apiVersion": true, "kind": true, "namespace": true, "creationTimestamp": true}

// sameString reports whether a and b are the same string (same bytes in memory, not only equal).
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// rekeyed returns a copy of root with its metadata map copied too, their well-known keys the
// static ones, the values of sharedValueKeys the Interner's boxed ones and the other subtrees
// (metadata: its labels and annotations) the shared ones, each key written once (see
// Interner.Transform); ok is false (nothing made) when root's keys already are the static ones,
// as after a first transform: a second transform (client-go's watch-list path) then writes
// nothing. in.mu must be held.
func (in *Interner) rekeyed(root map[string]any) (map[string]any, bool) {
	md, _ := root["metadata"].(map[string]any)
	if !needsRekey(root) && !needsRekey(md) {
		return nil, false
	}
	out := make(map[string]any, len(root))
	for k, v := range root {
		k = staticKey(k)
		if k == "metadata" && md != nil {
			out[k] = in.rekeyMetadata(md)
			continue
		}
		out[k] = in.canonical(in.sharedValue(k, v))
	}
	return out, true
}

// needsRekey reports whether m has a well-known key that is not the static string.
func needsRekey(m map[string]any) bool {
	for k := range m {
		if s, ok := wellKnownKeys[k]; ok && !sameString(s, k) {
			return true
		}
	}
	return false
}

// rekeyMetadata is rekeyed's copy of the metadata map md.
func (in *Interner) rekeyMetadata(md map[string]any) map[string]any {
	out := make(map[string]any, len(md))
	for k, v := range md {
		k = staticKey(k)
		v = in.sharedValue(k, v)
		if sharedMetadataTrees[k] {
			v = in.canonical(v)
		}
		out[k] = v
	}
	return out
}

// staticKey returns the static string of a well-known key, else k.
func staticKey(k string) string {
	if s, ok := wellKnownKeys[k]; ok {
		return s
	}
	return k
}

// sharedValue returns the Interner's boxed string for a string value of a sharedValueKeys key
// (boxedValue), else v.
func (in *Interner) sharedValue(k string, v any) any {
	if str, ok := v.(string); ok && sharedValueKeys[k] {
		return in.boxedValue(str)
	}
	return v
}

// boxedValue returns the table's boxed string equal to s, adding it the second time s is seen
// (the first time only its hash is kept). Both tables are bounded and start over when full.
func (in *Interner) boxedValue(s string) any {
	if v, ok := in.values[s]; ok {
		return v
	}
	h := maphash.String(in.seed, s)
	if _, ok := in.valuesSeen[h]; !ok {
		if len(in.valuesSeen) >= internedValuesSize {
			clear(in.valuesSeen)
		}
		in.valuesSeen[h] = struct{}{}
		return s
	}
	if len(in.values) >= internedValuesSize {
		clear(in.values)
	}
	var v any = s
	in.values[s] = v
	return v
}

// internedValuesSize bounds the Interner's tables of shared values and of values seen once.
const internedValuesSize = 4096
