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

// PodGroupName is the name of a gang's PodGroup: "pg-<top owner UID>-<gang>[-<replica>]", the form
// KAI's own Workload Map path uses (pg-<UID>-<podGroup.name>), so the name is deterministic,
// unique per top owner UID and gang key, and the same across controller restarts. A name longer
// than 63 characters is cut and ends with a short hash of the whole name.
func PodGroupName(ownerUID, gang, replica string) string {
	parts := []string{"pg", ownerUID, gang}
	if replica != "" {
		parts = append(parts, replica)
	}
	return fitName(strings.Join(parts, "-"))
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
