package expr

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// budgetFuzzLimits are small bounds, so that a fuzzed evaluation reaches them quickly: 1 MiB and
// 16,384 elements produced, 200,000 steps.
var budgetFuzzLimits = Limits{Timeout: 2 * time.Second, MaxResults: 100, CELCostLimit: 32_768,
	MaxProducedBytes: 1 << 20, MaxProducedElements: 16 << 10, MaxSteps: 200_000}

// allowedAlloc is what an evaluation that charged steps may allocate in all, garbage included,
// under budgetFuzzLimits: four times the produced-bytes budget (a value charged once may be
// built, copied by the builtin and converted: gojq's encoders write through a buffer that
// doubles, append doubles an array's backing store), 64 bytes per step for the constant-size
// garbage of each instruction (boxed numbers, the operand pairs of guarded operators, closures),
// and 256 KiB for the evaluation's own set-up (the gojq environment, its stacks, the context).
func allowedAlloc(steps int64) uint64 {
	return uint64(4*budgetFuzzLimits.MaxProducedBytes + 64*steps + 256<<10)
}

var budgetSeeds = []string{
	`.s | split(".") | length`,
	`.s / "." | length`,
	`[.items[] | . + 1] | length`,
	`[.items[] | {a: ., b: [.]}] | length`,
	`def f: [f]; f`,
	`def f: 1 + f; f`,
	`reduce .items[] as $i (""; . + .) | length`,
	`[.s | scan("a")] | length`,
	`[.items[] as $x | .items[] as $y | $x] | length`,
	`[.items[] | [.,.,.,.]] | flatten | length`,
	`.digits | tonumber`,
	`.s | tojson | fromjson | length`,
	`.s | explode | implode | length`,
	`.o | to_entries | map(.value) | add`,
	`[.items[] | tostring] | join(",") | ascii_upcase | @base64 | length`,
	`.items | sort | group_by(. % 3) | map(length)`,
	`[.s | splits("a")] | length`,
	`.s | gsub("a"; "bb") | length`,
	`[.items[] | "\(.)-\(.)"] | length`,
}

// FuzzEvaluationAllocatesWithinItsBudget evaluates fuzzed jq expressions on a workload with
// fuzz-sized strings and arrays, and measures (runtime.MemStats.TotalAlloc, on this goroutine's
// evaluation alone) that no evaluation allocates more than its budget allows (allowedAlloc of
// the steps it ran), whether it ends with a result, an error or a refusal: the budget is charged
// for what is produced, not assumed to be.
func FuzzEvaluationAllocatesWithinItsBudget(f *testing.F) {
	for _, s := range budgetSeeds {
		f.Add(s, uint16(50_000), uint16(2000))
	}
	c := newTestCompiler(f, budgetFuzzLimits)
	f.Fuzz(func(t *testing.T, src string, strLen, items uint16) {
		p, err := c.Compile(JQ, src, Object, Read)
		if err != nil {
			return
		}
		arr := make([]any, int(items))
		for i := range arr {
			arr[i] = i
		}
		in := map[string]any{
			"s": strings.Repeat("a.", int(strLen)), "digits": strings.Repeat("9", int(strLen)),
			"items": arr, "o": map[string]any{"a": 1, "b": "x", "c": []any{1, 2}},
		}
		input := Input{Object: Normalize(in).(map[string]any), Normalized: true}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, b, err := p.(*jqProgram).eval(context.Background(), input)
		runtime.ReadMemStats(&after)
		checkEvalErr(t, src, err)
		if b == nil || raceDetector { // under -race the evaluation runs (no panic, errors checked) but
			return // its allocations are not measured: see raceDetector
		}
		if got, allowed := after.TotalAlloc-before.TotalAlloc, allowedAlloc(b.steps); got > allowed {
			t.Fatalf("%q allocated %d bytes in %d steps, charging %d bytes and %d elements: more than the %d its budget allows (err %v)",
				src, got, b.steps, b.bytes, b.elems, allowed, err)
		}
	})
}
