package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// TestKeepHelpCommandsNameTheDefinitions: the demo's grouper reads CustomJob's definition from
// --definitions (no chart-installed grouper the CLI could adopt it from), so every gangmap get or
// describe command printed for the kept control plane must pass the same directory; without it
// `gangmap get customjobs` exits 1 with "no usable Workload Map definition ... gangmap leaves the
// kind to KAI's default grouper" while the demo's grouper groups the kind.
func TestKeepHelpCommandsNameTheDefinitions(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	printKeepHelp("/assets", "/kubeconfig", "http://127.0.0.1:41234/metrics")
	os.Stdout = stdout
	w.Close()
	var out bytes.Buffer
	if _, err := io.Copy(&out, r); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.Contains(line, "./cmd/gangmap get") && !strings.Contains(line, "./cmd/gangmap describe") {
			continue
		}
		n++
		if !strings.Contains(line, "--definitions "+definitionsDir) {
			t.Errorf("printed command lacks --definitions %s: %q", definitionsDir, strings.TrimSpace(line))
		}
	}
	if n == 0 {
		t.Fatalf("no gangmap get or describe command printed:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "curl -s http://127.0.0.1:41234/metrics | grep '^gangmap_'") {
		t.Errorf("the kept grouper's metrics URL is not printed:\n%s", out.String())
	}
}
