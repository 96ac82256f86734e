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

// KAIAlphaName is the name KAI v0.17's Karta fallback gives a pod's PodGroup in the alpha
// gangScheduling.podGroups form: "pg-<top owner UID>", then "-" and the pod's grouping-key values
// joined with "-" when it has any (KAI pkg/podgrouper/podgrouper/plugins/karta/grouper.go,
// calcPodGroupName: fmt.Sprintf("%s-%s", PodGroupNamePrefix, UID), then
// strings.Join(groupingKeys, "-")). The values are used as they are: KAI neither lower-cases,
// sanitizes, cuts nor hashes them, and the alpha group's own name is not part of the name.
func KAIAlphaName(ownerUID string, keys ...string) string {
	base := "pg-" + ownerUID
	if len(keys) == 0 {
		return base
	}
	return base + "-" + strings.Join(keys, "-")
}

// AlphaPodGroupName is the name gangmap gives a pod's PodGroup in the alpha form: KAIAlphaName,
// so that a pod KAI grouped is in the same object. KAI refuses a keyed name that is not a
// DNS-1123 subdomain (grouping_instruction_validation.go validatePodGroupNameFromGroupingKeys)
// and then groups the pod nowhere, so there is no KAI object to join: gangmap then writes the
// name lower-cased, with every character other than a-z, 0-9 and "-" made "-", cut to fit 253
// characters, and ending with "-" and 8 hex digits of the SHA-256 of KAI's name (so that two
// such names stay distinct).
func AlphaPodGroupName(ownerUID string, keys ...string) string {
	name := KAIAlphaName(ownerUID, keys...)
	if len(keys) == 0 || len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	h := shortHash(name)
	out := strings.Trim(invalidLabelChars.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if max := validation.DNS1123SubdomainMaxLength - len(h) - 1; len(out) > max {
		out = strings.TrimRight(out[:max], "-")
	}
	return out + "-" + h
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
