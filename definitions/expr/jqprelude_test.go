package expr

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/itchyny/gojq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPreludeSharedTreesUnchanged compiles and runs, from several goroutines, queries that reach
// every prelude definition (guarded builtins, operators, formats, regex) and every shadowed
// builtin, then checks that the shared syntax trees still print as the prelude's source parsed
// afresh: no compilation changes a tree another compilation uses (run with -race too).
func TestPreludeSharedTreesUnchanged(t *testing.T) {
	want := map[string]string{}
	for _, d := range jqPrelude {
		want[d.key] = d.def.String()
	}
	fresh, err := gojq.Parse(preludeSource() + ".")
	require.NoError(t, err)
	for _, fd := range fresh.FuncDefs {
		assert.Equal(t, meteredDef(fd.String()).String(), want[fmt.Sprintf("%s/%d", fd.Name, len(fd.Args))])
	}
	shadowed := map[string]string{}
	for ref, fd := range unavailableDefs {
		shadowed[ref] = fd.String()
	}

	c, err := NewCompiler(DefaultLimits())
	require.NoError(t, err)
	var srcs []string
	for _, ref := range slices.Sorted(maps.Keys(jqGuardedBuiltins)) {
		name, arity, _ := strings.Cut(ref, "/")
		args := strings.TrimSuffix(strings.Repeat(`"a"; `, atoiOr0(arity)), "; ")
		if args != "" {
			name += "(" + args + ")"
		}
		srcs = append(srcs, fmt.Sprintf(`try ([.a] | %s) catch "x"`, name))
	}
	srcs = append(srcs, `.a + 1 - 2 * 3 / 4 % 5 == 1 or 1 != 2 and 1 < 2 and 1 > 0 and 1 <= 1 and 1 >= 1`,
		`"\(.a)" | @html, @uri, @csv, @tsv, @sh, @base64, @base64d`, `.a += 1 | .b -= 1 | .c *= 2`,
		`def input: 1; [input, (def g: splits("a"; "g"); g)]`)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, src := range srcs {
				p, err := c.Compile(JQ, src, Object, Action)
				if !assert.NoError(t, err, src) {
					continue
				}
				_, _ = p.Eval(context.Background(), Input{Object: map[string]any{"a": "x"}})
			}
		}()
	}
	wg.Wait()
	for _, d := range jqPrelude {
		assert.Equal(t, want[d.key], d.def.String(), "prelude definition %s changed by a compilation", d.key)
	}
	for ref, fd := range unavailableDefs {
		assert.Equal(t, shadowed[ref], fd.String(), "shadowing definition %s changed", ref)
	}
}
