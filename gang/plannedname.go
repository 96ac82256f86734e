package gang

import (
	"regexp"
	"strings"
)

// HasKeyPlaceholder reports whether a planned PodGroup name holds a {<expression>} placeholder:
// in the alpha podGroups form, a grouping key the plan cannot read before the pods exist (a label
// the operator sets) is written so, and each pod's PodGroup takes the key's value from the pod
// (AlphaPodGroupName). Such a name is not an object's name: find the real PodGroups with
// PlannedNameMatches.
func HasKeyPlaceholder(planned string) bool {
	_, ok := plannedPattern(planned)
	return ok
}

// PlannedNameMatches reports whether actual is a name the planned name can take: equal to it
// when it has no placeholder, else its text outside placeholders verbatim and each {<expression>}
// replaced by one non-empty value (KAI formats a key's value with %v and refuses an empty one,
// karta/grouper.go calcPodGroupName and Karta's ExtractGroupKeys). A placeholder's expression may
// itself hold braces and quoted strings; they are skipped as the expression languages quote them.
// A pod whose values give a name KAI refuses (not DNS-1123) is in a fitted name (lower case, hash
// suffix) that does not match.
func PlannedNameMatches(planned, actual string) bool {
	return PlannedNameMatcher(planned)(actual)
}

// PlannedNameMatcher is PlannedNameMatches with the planned name compiled once, for matching
// many names.
func PlannedNameMatcher(planned string) func(actual string) bool {
	re, ok := plannedPattern(planned)
	if !ok {
		return func(actual string) bool { return actual == planned }
	}
	return re.MatchString
}

// plannedPattern compiles the planned name into an anchored pattern, or says it has no
// placeholder.
func plannedPattern(planned string) (*regexp.Regexp, bool) {
	var b strings.Builder
	b.WriteString("^")
	found := false
	lit := 0
	for i := 0; i < len(planned); i++ {
		if planned[i] != '{' {
			continue
		}
		end := placeholderEnd(planned, i)
		if end < 0 {
			break
		}
		b.WriteString(regexp.QuoteMeta(planned[lit:i]))
		b.WriteString("(.+)")
		found = true
		lit = end + 1
		i = end
	}
	if !found {
		return nil, false
	}
	b.WriteString(regexp.QuoteMeta(planned[lit:]))
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, false
	}
	return re, true
}

// placeholderEnd returns the index of the '}' closing the placeholder opened at start, skipping
// nested braces and quoted strings ("..." and '...' with backslash escapes), or -1.
func placeholderEnd(s string, start int) int {
	depth := 0
	var quote byte
	for i := start; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}
