package definitions_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gangmap/gangmap/definitions/expr"
)

// BenchmarkDecodeAndCompileSeeds runs FuzzDecodeAndCompile's body once per seed of its corpus per
// iteration (the catalog's files and the small seeds): the cost of one pass of the fuzz target.
func BenchmarkDecodeAndCompileSeeds(b *testing.B) {
	seeds := decodeAndCompileSeeds(b)
	comp, err := expr.NewCompiler(expr.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range seeds {
			decodeAndCompile(b, comp, s)
		}
	}
}

func decodeAndCompileSeeds(tb testing.TB) [][]byte {
	files, _ := filepath.Glob("catalog/*.yaml")
	var out [][]byte
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}
