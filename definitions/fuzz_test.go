package definitions_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
)

// FuzzDecodeAndCompile feeds arbitrary bytes to the loader and compiles whatever decodes: it must
// never panic, and every failure is an error (a DefinitionError after decoding).
func FuzzDecodeAndCompile(f *testing.F) {
	files, _ := filepath.Glob("catalog/*.yaml")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(customJob))
	f.Add([]byte("apiVersion: run.ai/v1alpha1\nkind: Karta\nspec: {structureDefinition: {rootComponent: {name: a}}}\n"))
	comp, err := expr.NewCompiler(expr.DefaultLimits())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) { decodeAndCompile(t, comp, data) })
}

// decodeAndCompile is FuzzDecodeAndCompile's body: data is decoded strictly and leniently, and
// every definition that decodes is compiled. Strict decoding only adds refusals (unknown
// fields), so when it succeeds the lenient decoding must give the same definitions without a
// warning; they are then compiled once (compiling is deterministic), not once per decoding.
func decodeAndCompile(tb testing.TB, comp *expr.Compiler, data []byte) {
	strict, strictErr := definitions.Decode(bytes.NewReader(data), "fuzz.yaml", definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	lenient, err := definitions.Decode(bytes.NewReader(data), "fuzz.yaml", definitions.SourceFile, definitions.DecodeOptions{})
	if strictErr == nil {
		if err != nil {
			tb.Fatalf("decodes strictly but not leniently: %v", err)
		}
		if !reflect.DeepEqual(strict, lenient) {
			tb.Fatal("strict and lenient decoding of the same definitions differ")
		}
	}
	if err != nil {
		return
	}
	for _, l := range lenient {
		c, err := definitions.Compile(l, comp)
		if err == nil && c.Root() == nil {
			tb.Fatal("a compiled definition has no root")
		}
	}
}
