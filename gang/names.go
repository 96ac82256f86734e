package gang

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxNameLength is the longest PodGroup or sub-group name gangmap writes: a DNS-1123 label, as
// KAI's CRD pattern for sub-groups requires and PodGroup names stay within.
const MaxNameLength = validation.DNS1123LabelMaxLength

// PodGroupName is the name of a gang's PodGroup in the current gangScheduling.podGroup form (and
// without gang hints): "pg-<top owner UID>-<gang>[-<replica>]", the name KAI v0.17's Karta
// fallback gives the same definition (KAI pkg/podgrouper/podgrouper/plugins/karta/grouper.go,
// getPodGroupMetadataV2 with calcPodGroupName(topOwner, []string{podGroup.name})), so a pod KAI
// touched joins the same object. It is deterministic, unique per top owner UID and gang key, and
// the same across controller restarts. A name longer than 63 characters is cut and ends with a
// short hash of the whole name.
func PodGroupName(ownerUID, gang, replica string) string {
	parts := []string{"pg", ownerUID, gang}
	if replica != "" {
		parts = append(parts, replica)
	}
	return fitName(strings.Join(parts, "-"))
}

// AlphaPodGroupName is the name of a gang's PodGroup in the alpha gangScheduling.podGroups form:
// "pg-<top owner UID>" followed by "-<value>" for each grouping-key value, exactly as KAI v0.17's
// Karta fallback names it (KAI pkg/podgrouper/podgrouper/plugins/karta/grouper.go,
// getPodGroupMetadataAlpha and calcPodGroupName: "%s-%s" of PodGroupNamePrefix and the UID, then
// strings.Join(groupingKeys, "-")). The alpha group's own name is not part of it (KAI's rule).
// KAI refuses a keyed name that is not a DNS-1123 subdomain (validatePodGroupNameFromGroupingKeys);
// gangmap cuts one longer than 253 characters with a hash instead, as fitName does at 63.
func AlphaPodGroupName(ownerUID string, keys ...string) string {
	name := strings.Join(append([]string{"pg", ownerUID}, keys...), "-")
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	h := shortHash(name)
	return strings.TrimRight(name[:validation.DNS1123SubdomainMaxLength-len(h)-1], "-.") + "-" + h
}

var invalidLabelChars = regexp.MustCompile(`[^a-z0-9-]+`)

// SanitizeLabel turns s into a DNS-1123 label: lower case, runs of other characters become "-",
// no leading or trailing "-", at most 63 characters (cut with a hash suffix). An empty result
// becomes "x" followed by a hash of s.
func SanitizeLabel(s string) string {
	out := strings.Trim(invalidLabelChars.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if out == "" {
		return "x" + shortHash(s)
	}
	return fitName(out)
}

// fitName cuts a name to MaxNameLength, ending it with "-" and 8 hex digits of the SHA-256 of
// the whole name so that two long names stay distinct.
func fitName(s string) string {
	if len(s) <= MaxNameLength {
		return s
	}
	h := shortHash(s)
	head := strings.TrimRight(s[:MaxNameLength-len(h)-1], "-.")
	return head + "-" + h
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}
