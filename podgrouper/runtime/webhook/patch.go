package webhook

import (
	"errors"
	"strings"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
)

// patchOp is one JSON Patch (RFC 6902) operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// groupOps are the JSON patch (RFC 6902) operations that make on the admitted pod the change
// the pod controller makes: KAI's skip annotation and pod-group-name set, the sub-group label set
// (or removed when the pod has no sub-group). They touch nothing else: `add` (which also replaces
// an existing member) of /metadata/annotations/<key> and /metadata/labels/<key>, `add` of the
// whole /metadata/annotations or /metadata/labels map (or of /metadata) when the object has none,
// and `remove` of a stale sub-group label. Keys are escaped as JSON pointers ("~" as "~0", "/" as
// "~1"). None when the pod already carries every key. Error: an empty podGroup.
func groupOps(pod *podview.Decoded, podGroup, subGroup string) ([]patchOp, error) {
	if podGroup == "" {
		return nil, errors.New("no PodGroup name to set")
	}
	ann := map[string]string{kaikeys.SkipPodGrouper: "true", kaikeys.PodGroupName: podGroup}
	ops := metadataOps(pod, ann, subGroup, kaikeys.SkipPodGrouper, kaikeys.PodGroupName)
	if _, has := pod.Pod.Labels[kaikeys.SubGroupName]; subGroup == "" && has {
		ops = append(ops, patchOp{Op: "remove", Path: "/metadata/labels/" + escapePointer(kaikeys.SubGroupName)})
	}
	return ops, nil
}

// metadataOps are the operations that give the pod the annotations ann (keys in order) and, when
// subGroup is not "", the sub-group label: the whole metadata when the object has none, else
// setKeys of each.
func metadataOps(pod *podview.Decoded, ann map[string]string, subGroup string, keys ...string) []patchOp {
	var lbl map[string]string
	if subGroup != "" {
		lbl = map[string]string{kaikeys.SubGroupName: subGroup}
	}
	if !pod.HasMetadata {
		md := map[string]any{"annotations": ann}
		if lbl != nil {
			md["labels"] = lbl
		}
		return []patchOp{{Op: "add", Path: "/metadata", Value: md}}
	}
	ops := setKeys(make([]patchOp, 0, 3), "/metadata/annotations", pod.Pod.Annotations, ann, keys...)
	if lbl != nil {
		ops = setKeys(ops, "/metadata/labels", pod.Pod.Labels, lbl, kaikeys.SubGroupName)
	}
	return ops
}

// setKeys appends the operations that give the map at path (cur, nil when the object has none)
// the values in want, for keys in order: the whole map when there is none, else an `add` per key
// whose value differs.
func setKeys(ops []patchOp, path string, cur, want map[string]string, keys ...string) []patchOp {
	if cur == nil {
		return append(ops, patchOp{Op: "add", Path: path, Value: want})
	}
	for _, k := range keys {
		if v, ok := cur[k]; !ok || v != want[k] {
			ops = append(ops, patchOp{Op: "add", Path: path + "/" + escapePointer(k), Value: want[k]})
		}
	}
	return ops
}

// pointerEscaper escapes a JSON pointer reference token (RFC 6901: "~" as "~0", "/" as "~1").
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(s string) string { return pointerEscaper.Replace(s) }
