package expr

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/functions"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
)

// celGrowingFunctions are the strings-extension functions whose result can be much larger than
// their inputs, so that cel-go's runtime cost (charged after the call, by the result's size)
// comes too late: one replace or join call could allocate gigabytes first. boundedStrings
// re-declares them with a check of the result's size before the call.
var celGrowingFunctions = []string{"replace", "join", "format", "strings.quote"}

// boundedStrings re-declares celGrowingFunctions with the same overloads, each refusing (before
// running cel-go's implementation) a result longer than maxValue bytes with a *sizeLimitError.
// cel-go lets a later declaration of an overload replace its binding.
func boundedStrings(maxValue int) (cel.EnvOption, error) {
	env, err := cel.NewEnv(ext.Strings())
	if err != nil {
		return nil, err
	}
	fns := env.Functions()
	var opts []cel.EnvOption
	for _, name := range celGrowingFunctions {
		decl, ok := fns[name]
		if !ok {
			return nil, fmt.Errorf("the strings extension has no function %q", name)
		}
		bindings, err := decl.Bindings()
		if err != nil {
			return nil, err
		}
		impl := map[string]*functions.Overload{}
		for _, b := range bindings {
			impl[b.Operator] = b
		}
		var overloads []cel.FunctionOpt
		for _, o := range decl.OverloadDecls() {
			orig, ok := impl[o.ID()]
			if !ok {
				return nil, fmt.Errorf("no binding for overload %s", o.ID())
			}
			binding := cel.FunctionBinding(guardCELCall(name, maxValue, orig))
			if o.IsMemberFunction() {
				overloads = append(overloads, cel.MemberOverload(o.ID(), o.ArgTypes(), o.ResultType(), binding))
			} else {
				overloads = append(overloads, cel.Overload(o.ID(), o.ArgTypes(), o.ResultType(), binding))
			}
		}
		opts = append(opts, cel.Function(name, overloads...))
	}
	return cel.Lib(envOptions(opts)), nil
}

// envOptions is a cel.Library made of plain options.
type envOptions []cel.EnvOption

func (o envOptions) CompileOptions() []cel.EnvOption { return o }

func (envOptions) ProgramOptions() []cel.ProgramOption { return nil }

// guardCELCall wraps orig with the result-size check of the named function.
func guardCELCall(name string, maxValue int, orig *functions.Overload) functions.FunctionOp {
	return func(args ...ref.Val) ref.Val {
		if n := celResultSize(name, args); n > int64(maxValue) {
			return types.WrapErr(&sizeLimitError{what: name, detail: fmt.Sprintf("a result of %d bytes (more than %d)", n, maxValue)})
		}
		switch {
		case orig.Function != nil:
			return orig.Function(args...)
		case orig.Binary != nil && len(args) == 2:
			return orig.Binary(args[0], args[1])
		case orig.Unary != nil && len(args) == 1:
			return orig.Unary(args[0])
		}
		return types.NoSuchOverloadErr()
	}
}

// celResultSize returns (an upper bound of) the byte length of the named function's result,
// in time linear in its arguments.
func celResultSize(name string, args []ref.Val) int64 {
	str := func(i int) string {
		if i < len(args) {
			if s, ok := args[i].(types.String); ok {
				return string(s)
			}
		}
		return ""
	}
	switch name {
	case "replace":
		s, old, repl := str(0), str(1), str(2)
		count := int64(strings.Count(s, old)) // for old == "": one more than the code points
		if len(args) > 3 {
			if n, ok := args[3].(types.Int); ok && n >= 0 {
				count = min(count, int64(n))
			}
		}
		return int64(len(s)) + count*max(int64(len(repl))-int64(len(old)), 0)
	case "join":
		return celSize(args[0]) + celListLen(args[0])*int64(len(str(1)))
	case "format":
		// A formatted value takes at most a few bytes more than its own size; %s of a list or
		// map adds brackets and separators per element.
		return int64(len(str(0))) + 2*celSize(args[1])
	case "strings.quote":
		return 4*int64(len(str(0))) + 2 // \x00 escapes: 4 bytes per byte at most
	}
	return 0
}

// celListLen is the length of a CEL list (0 for anything else).
func celListLen(v ref.Val) int64 {
	if l, ok := v.(traits.Lister); ok {
		if n, ok := l.Size().(types.Int); ok {
			return int64(n)
		}
	}
	return 0
}

// celSize is the total byte length of the strings in v (lists and maps walked), plus 8 per
// other value. It walks every element: its cost is that of the call it guards.
func celSize(v ref.Val) int64 {
	switch t := v.(type) {
	case types.String:
		return int64(len(t))
	case types.Bytes:
		return int64(len(t))
	case traits.Lister:
		var n int64
		it := t.Iterator()
		for it.HasNext() == types.True {
			n += celSize(it.Next()) + 2
		}
		return n
	case traits.Mapper:
		var n int64
		it := t.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			n += celSize(k) + celSize(t.Get(k)) + 4
		}
		return n
	}
	return 8
}
