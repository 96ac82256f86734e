// Command modsum computes the two go.sum lines of a module version (the zip's "h1:" hash and the
// go.mod's "/go.mod h1:" hash) from a git repository's tag, as the Go module proxy would serve
// that version: the proxy runs the go command, which reads the tag's tree with `git archive`
// (cmd/go/internal/modfetch/codehost/git.go ReadZip: -c core.autocrlf=input -c core.eol=lf
// archive --format=zip), builds the module zip from those files with golang.org/x/mod/zip's rules
// (vendored and nested-module files, irregular files left out: cmd/go/internal/modfetch/coderepo.go
// Zip calls modzip.Create) and hashes it with golang.org/x/mod/sumdb/dirhash.HashZip (Hash1);
// the go.mod line hashes the tag's go.mod alone, as one file named "go.mod"
// (cmd/go/internal/modfetch/fetch.go goModSum: dirhash.Hash1([]string{"go.mod"}, ...)).
//
// gangmap uses it for KAI Scheduler's module, which this workplace's module proxy does not serve
// (kaipodgrouper/go.sum; make kai-sum KAI_SRC=<checkout>). The lines are computed, not fetched:
// a machine that reaches sum.golang.org checks them on the first `go mod download` (GOSUMDB).
//
//	modsum -repo /path/to/checkout -rev v0.17.0 [-module github.com/owner/name] [-subdir dir]
//	modsum -repo ... -rev ... -gosum kaipodgrouper/go.sum    replace that module's lines in a go.sum
//
// It prints the two lines. -module defaults to the module line of the tag's go.mod; -rev is
// also the version (a tag: vX.Y.Z). The repository may be bare; it is only read.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var o options
	flag.StringVar(&o.repo, "repo", "", "git repository (a work tree or a bare repository), only read")
	flag.StringVar(&o.rev, "rev", "", "the version's tag (vX.Y.Z[-pre]); also the version of the lines")
	flag.StringVar(&o.module, "module", "", "module path (default: the module line of the tag's go.mod)")
	flag.StringVar(&o.subdir, "subdir", "", "the module's directory in the repository (default: the root)")
	flag.StringVar(&o.goSum, "gosum", "", "a go.sum file whose lines of this module version are replaced (added when absent)")
	flag.Parse()
	if err := o.run(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "modsum: %v\n", err)
		os.Exit(1)
	}
}
