package expr

import (
	"context"
	"testing"
)

// benchEval measures evaluating src on the JobSet fixture, compiled once and recompiled on every
// iteration.
func benchEval(b *testing.B, lang Language, src string) {
	c := newTestCompiler(b, Limits{})
	in := Input{Object: jobSet(b), Variables: map[string]any{"size": 3}}
	ctx := context.Background()
	b.Run("compiled", func(b *testing.B) {
		p, err := c.Compile(lang, src, Object, Read)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Eval(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("recompiled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := c.Compile(lang, src, Object, Read)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.Eval(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEvalJQ(b *testing.B) {
	benchEval(b, JQ, `.spec.replicatedJobs[] | {name, pods: ((.replicas // 1) * .template.spec.parallelism)}`)
}

func BenchmarkEvalCEL(b *testing.B) {
	benchEval(b, CEL, `object.spec.replicatedJobs.map(j, {'name': j.name, 'pods': j.?replicas.orValue(1) * j.template.spec.parallelism})`)
}
