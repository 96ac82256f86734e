package webhook

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
)

// gangmapKeys are the only keys the patch may set or remove, per metadata map.
var gangmapKeys = map[string][]string{
	"annotations": {kaikeys.SkipPodGrouper, kaikeys.PodGroupName},
	"labels":      {kaikeys.SubGroupName},
}

// FuzzPatch checks the webhook's patch on arbitrary pods: applied as the API server applies it
// (RFC 6902), it sets gangmap's annotations and sub-group label to the decided values and
// changes, adds or removes nothing else, whatever the pod holds (unknown fields, odd keys, empty
// or missing maps, gangmap's keys already set or stale).
//
// The pod is any JSON object, re-encoded as the API server sends it (one member per key): an
// admission request's object is the API server's own serialization, so duplicate keys and keys
// that differ from "metadata", "labels" or "annotations" only in case (which Go's decoder would
// fold) do not reach the webhook and are skipped.
func FuzzPatch(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"},"annotations":{"x":"y"}},"spec":{"schedulerName":"kai-scheduler","containers":[{"name":"c","futureField":1}]},"futureTop":{"a":[1,2]}}`), "pg-1", "workers")
	f.Add([]byte(`{"metadata":{}}`), "pg", "")
	f.Add([]byte(`{}`), "pg", "sg")
	f.Add([]byte(`{"metadata":{"labels":null,"annotations":{"kai.scheduler/skip-pod-grouper":"false","pod-group-name":"old"}}}`), "pg-2", "")
	f.Add([]byte(`{"metadata":{"labels":{"kai.scheduler/subgroup-name":"stale","a/b~c":"d"}}}`), "pg-3", "")
	f.Fuzz(func(t *testing.T, data []byte, podGroup, subGroup string) {
		if !utf8.ValidString(podGroup) || !utf8.ValidString(subGroup) {
			return // names come from the plan: DNS labels, never invalid UTF-8 (JSON would replace it)
		}
		raw, ok := canonicalPod(data)
		if !ok {
			return
		}
		decoded, err := podview.DecodePod(raw) // as Handle decodes the pod
		if err != nil {
			return // the webhook admits an undecodable pod unchanged
		}
		patch, err := groupPatch(decoded, podGroup, subGroup)
		if podGroup == "" {
			if err == nil {
				t.Fatal("an empty PodGroup name must be refused")
			}
			return
		}
		if err != nil {
			t.Fatalf("patch: %v", err)
		}
		after := raw
		if patch != nil {
			p, err := jsonpatch.DecodePatch(patch)
			if err != nil {
				t.Fatalf("patch %s does not decode: %v", patch, err)
			}
			if after, err = p.Apply(raw); err != nil {
				t.Fatalf("patch %s does not apply to %s: %v", patch, raw, err)
			}
		}
		checkOnlyGangmapKeys(t, raw, after, podGroup, subGroup)
	})
}

// canonicalPod re-encodes data as the API server would send it, or says it is not a pod the
// API server could send (not a JSON object, or case-folded metadata keys).
func canonicalPod(data []byte) ([]byte, bool) {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, false
	}
	if foldedKey(m, "metadata") {
		return nil, false
	}
	if md, ok := m["metadata"].(map[string]any); ok && (foldedKey(md, "labels") || foldedKey(md, "annotations")) {
		return nil, false
	}
	raw, err := json.Marshal(m)
	return raw, err == nil
}

// foldedKey reports whether m has a key equal to name under case folding but not exactly name.
func foldedKey(m map[string]any, name string) bool {
	for k := range m {
		if k != name && strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// checkOnlyGangmapKeys fails unless after is before with gangmap's keys set to the decided
// values (the sub-group label removed when there is no sub-group), maps and metadata created
// only to hold them, and nothing else changed.
func checkOnlyGangmapKeys(t *testing.T, before, after []byte, podGroup, subGroup string) {
	t.Helper()
	var b, a map[string]any
	if err := json.Unmarshal(before, &b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(after, &a); err != nil {
		t.Fatalf("patched pod is not JSON: %v", err)
	}
	md, ok := a["metadata"].(map[string]any)
	if !ok {
		t.Fatalf("patched pod has no metadata object: %s", after)
	}
	want := map[string]map[string]string{
		"annotations": {kaikeys.SkipPodGrouper: "true", kaikeys.PodGroupName: podGroup},
		"labels":      {},
	}
	if subGroup != "" {
		want["labels"][kaikeys.SubGroupName] = subGroup
	}
	for field, keys := range gangmapKeys {
		m, _ := md[field].(map[string]any)
		for _, k := range keys {
			v, has := m[k]
			w, wantHas := want[field][k]
			if has != wantHas || (has && v != w) {
				t.Fatalf("%s[%q] = %v (present %v), want %q (present %v); patched pod %s", field, k, v, has, w, wantHas, after)
			}
		}
	}
	strip(b)
	strip(a)
	if !reflect.DeepEqual(b, a) {
		t.Fatalf("the patch changed more than gangmap's keys:\nbefore %s\nafter  %s", before, after)
	}
}

// strip removes gangmap's keys from a pod, then the maps (and metadata) left empty or null,
// so that before and after compare equal when only gangmap's keys differ (the patch may create a
// map where there was none, an empty one or null).
func strip(pod map[string]any) {
	md, ok := pod["metadata"].(map[string]any)
	if !ok {
		return
	}
	for field, keys := range gangmapKeys {
		v, present := md[field]
		if present && v == nil {
			delete(md, field)
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		for _, k := range keys {
			delete(m, k)
		}
		if len(m) == 0 {
			delete(md, field)
		}
	}
	if len(md) == 0 {
		delete(pod, "metadata")
	}
}
