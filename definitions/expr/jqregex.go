package expr

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/itchyny/gojq"
	"k8s.io/utils/lru"
)

// regexCacheSize bounds the compiled patterns kept per Compiler (gojq keeps every pattern it
// ever saw, so patterns computed from input would grow its cache without bound).
const regexCacheSize = 256

// compiledRegex is a pattern with its instruction count (the factor of Go's linear-time
// matching).
type compiledRegex struct {
	re    *regexp.Regexp
	insts int64
}

var (
	regexCacheOnce sync.Once
	regexCache     *lru.Cache
)

// compileRegex compiles re with jq's flags (g: all matches, i: case-insensitive, m: dot
// matches newlines, as gojq), through a bounded cache.
func compileRegex(re, flags string) (*compiledRegex, error) {
	regexCacheOnce.Do(func() { regexCache = lru.New(regexCacheSize) })
	key := flags + "\x00" + re
	if v, ok := regexCache.Get(key); ok {
		return v.(*compiledRegex), nil
	}
	if i := strings.IndexFunc(flags, func(r rune) bool { return r != 'g' && r != 'i' && r != 'm' }); i >= 0 {
		return nil, fmt.Errorf("unsupported regular expression flag: %q", flags)
	}
	src := re
	if strings.ContainsRune(flags, 'i') {
		src = "(?i)" + src
	}
	if strings.ContainsRune(flags, 'm') {
		src = "(?s)" + src
	}
	parsed, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %s", re, err)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %s", re, err)
	}
	r, err := regexp.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %s", re, err)
	}
	c := &compiledRegex{re: r, insts: int64(len(prog.Inst))}
	regexCache.Add(key, c)
	return c, nil
}

// match implements _gm_match($__gm; $re; $flags; mode) on the input string v, as gojq's _match
// does but in time linear in the subject: code point offsets are counted once, moving forward.
// mode "test" returns whether re matches; "match" returns the match objects ({offset, length,
// string, captures}); "pieces" adds to each its "pre" (the text since the previous match) and
// "post" (the text after it), which sub and splits use instead of slicing the subject per match.
//
// Bounds: the pattern at most maxRegexPattern bytes, len(subject) × the pattern's instruction
// count at most maxRegexWork, at most maxRegexMatches matches.
func (g *guards) match(v any, args []any) any {
	b := budgetOf(args[0])
	mode, _ := args[3].(string)
	s, ok := v.(string)
	re, ok2 := args[1].(string)
	flags, ok3 := args[2].(string)
	if args[2] == nil {
		ok3 = true
	}
	if !ok || !ok2 || !ok3 {
		name := mode
		if name == "pieces" {
			name = "match"
		}
		return fmt.Errorf("%s cannot be applied to: %s (%s), %s", name, gojq.TypeOf(v), gojq.Preview(v), gojq.Preview(args[1]))
	}
	if len(re) > maxRegexPattern {
		return refuse(b, "regex", "a pattern of %d bytes (more than %d)", len(re), maxRegexPattern)
	}
	c, err := compileRegex(re, flags)
	if err != nil {
		return err
	}
	if work := int64(len(s)) * c.insts; work > maxRegexWork {
		return refuse(b, "regex", "a subject of %d bytes × %d pattern instructions (more than %d)", len(s), c.insts, maxRegexWork)
	}
	b.charge(int64(len(s)) * c.insts / 8)
	if mode == "test" {
		return c.re.MatchString(s)
	}
	n := 1
	if strings.ContainsRune(flags, 'g') {
		n = maxRegexMatches + 1
	}
	// FindAll's index slices (two ints per group, grown by doubling), checked before it runs.
	perIndex := int64(24 + 16*(c.re.NumSubexp()+1))
	if err := b.fits("regex", 2*int64(min(n, len(s)+1))*perIndex, 0); err != nil {
		return err
	}
	xs := c.re.FindAllStringSubmatchIndex(s, n)
	if err := b.produce("regex", 2*int64(len(xs))*perIndex, 0); err != nil {
		return err
	}
	if len(xs) > maxRegexMatches {
		return refuse(b, "regex", "more than %d matches", maxRegexMatches)
	}
	// Each match is an object of 4 to 6 entries and a capture object of 4 per group, its
	// strings substrings of s: checked before they are built, charged as estimated.
	perMatch := int64(costArray+costObject+6*costObjectEntry+3*costString) +
		int64(c.re.NumSubexp())*(costArrayElem+costObject+4*costObjectEntry+costString)
	if err := b.produce("regex", costArray+int64(len(xs))*perMatch, int64(len(xs))*int64(7+5*c.re.NumSubexp())); err != nil {
		return err
	}
	return matchObjects(s, c.re.SubexpNames(), xs, mode == "pieces")
}

// matchObjects renders the byte-offset matches xs of s as jq's match objects, with code point
// offsets and lengths.
func matchObjects(s string, names []string, xs [][]int, pieces bool) []any {
	pos := runeCounter{s: s}
	out := make([]any, len(xs))
	prevEnd := 0
	for i, x := range xs {
		offset := pos.at(x[0])
		captures := make([]any, 0, len(x)/2-1)
		for j := 1; j < len(x)/2; j++ {
			var name any
			if names[j] != "" {
				name = names[j]
			}
			if x[2*j] < 0 {
				captures = append(captures, map[string]any{"name": name, "offset": -1, "length": 0, "string": nil})
				continue
			}
			captures = append(captures, map[string]any{
				"name": name, "offset": pos.at(x[2*j]), "length": utf8.RuneCountInString(s[x[2*j]:x[2*j+1]]),
				"string": s[x[2*j]:x[2*j+1]],
			})
		}
		m := map[string]any{
			"offset": offset, "length": utf8.RuneCountInString(s[x[0]:x[1]]),
			"string": s[x[0]:x[1]], "captures": captures,
		}
		if pieces {
			m["pre"], m["post"] = s[prevEnd:x[0]], s[x[1]:]
			prevEnd = x[1]
		}
		out[i] = m
	}
	return out
}

// runeCounter converts byte offsets of s to code point offsets, moving from the last offset
// asked: forward or backward, so offsets asked in (nearly) increasing order cost O(len(s)) in
// total. A match's captures may start before an earlier capture (an alternation in a
// repetition), but never before the match, so the backward moves stay within one match.
type runeCounter struct {
	s           string
	byte, runes int
}

func (c *runeCounter) at(off int) int {
	if off >= c.byte {
		c.runes += utf8.RuneCountInString(c.s[c.byte:off])
	} else {
		c.runes -= utf8.RuneCountInString(c.s[off:c.byte])
	}
	c.byte = off
	return c.runes
}
