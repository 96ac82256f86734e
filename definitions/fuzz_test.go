package definitions_test

import (
	"bytes"
	"os"
	"path/filepath"
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
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, strict := range []bool{true, false} {
			ls, err := definitions.Decode(bytes.NewReader(data), "fuzz.yaml", definitions.SourceFile, definitions.DecodeOptions{Strict: strict})
			if err != nil {
				continue
			}
			for _, l := range ls {
				c, err := definitions.Compile(l, comp)
				if err == nil && c.Root() == nil {
					t.Fatal("a compiled definition has no root")
				}
			}
		}
	})
}
