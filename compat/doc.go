// Package compat is gangmap's compatibility suite (compat_test.go): the upstream Workload Map
// catalog's definitions (testdata/upstream, each with its source line) and KAI v0.17's own Karta
// fallback test definitions rewritten as YAML (testdata/kai) are planned on real manifests of
// their kinds (testdata/manifests, copied from the frameworks' repositories, each naming its
// source). The expected gangs come from the frameworks' documented semantics; where an upstream
// definition under- or overcounts, the test asserts that the plan says so in a note.
// docs/definitions.md ("Upstream definitions in gangmap") tabulates the results against KAI's
// fallback. The package has no code of its own.
package compat
