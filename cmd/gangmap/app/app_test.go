package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// result is what one in-process gangmap run printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// gangmap runs the command line in-process, as the binary "gangmap".
func gangmap(t *testing.T, args ...string) result {
	t.Helper()
	return gangmapAs(t, "gangmap", args...)
}

func gangmapAs(t *testing.T, argv0 string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runAs(argv0, args, &out, &errOut)
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

// decodeOne decodes s into v and fails unless s holds exactly one JSON document.
func decodeOne(t *testing.T, s string, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	require.NoError(t, dec.Decode(v), "stdout: %s", s)
	var extra json.RawMessage
	require.True(t, errors.Is(dec.Decode(&extra), io.EOF), "more than one JSON document on stdout: %s", s)
}

func TestRootUse(t *testing.T) {
	for argv0, want := range map[string]string{
		"gangmap":                        "gangmap",
		"/usr/local/bin/gangmap":         "gangmap",
		"/usr/local/bin/kubectl-gangmap": "kubectl gangmap",
		"kubectl-gangmap":                "kubectl gangmap",
		"/tmp/go-build/app.test":         "gangmap",
	} {
		assert.Equal(t, want, rootUse(argv0), argv0)
	}
}

func TestRootHelpSaysWhatGangmapIs(t *testing.T) {
	r := gangmap(t, "--help")
	assert.Equal(t, ExitOK, r.code)
	assert.Contains(t, r.stdout, "gangmap is a fallback pod-grouper for KAI Scheduler")
	assert.Contains(t, r.stdout, "plans KAI PodGroups (gangs)")
	assert.Contains(t, r.stdout, "kubectl-gangmap")
	for _, sub := range []string{"plan", "validate", "definitions", "version", "completion"} {
		assert.Contains(t, r.stdout, "\n  "+sub+" ", "help lists %s", sub)
	}
}

func TestKubectlPluginNameInHelpAndExamples(t *testing.T) {
	root := gangmapAs(t, "/home/me/bin/kubectl-gangmap", "--help")
	assert.Equal(t, ExitOK, root.code)
	assert.Contains(t, root.stdout, "Usage:\n  kubectl gangmap [command]\n")
	assert.Contains(t, root.stdout, `Use "kubectl gangmap [command] --help"`)

	r := gangmapAs(t, "/home/me/bin/kubectl-gangmap", "plan", "--help")
	assert.Equal(t, ExitOK, r.code)
	assert.Contains(t, r.stdout, "kubectl gangmap plan -f MANIFEST")
	assert.Contains(t, r.stdout, "kubectl gangmap plan -f examples/jobset-leader-workers.yaml")
	// The root's name replaces only the leading command name of an example, never a file name.
	assert.NotContains(t, r.stdout, "kubectl kubectl")
}

func TestVersion(t *testing.T) {
	r := gangmap(t, "version")
	assert.Equal(t, ExitOK, r.code)
	assert.Regexp(t, `^gangmap \S+ \(go1\.\S+, \w+/\w+\)\n$`, r.stdout)

	old := Version
	Version = "v1.2.3"
	defer func() { Version = old }()
	assert.Contains(t, gangmap(t, "version").stdout, "gangmap v1.2.3 ")
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		r := gangmap(t, "completion", shell)
		assert.Equal(t, ExitOK, r.code, shell)
		assert.Contains(t, r.stdout, "gangmap", shell)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for name, args := range map[string][]string{
		"unknown command":      {"plna"},
		"unknown flag":         {"plan", "--bogus"},
		"missing -f":           {"plan"},
		"unknown output":       {"plan", "-f", "testdata/manifests/jobset-leader-workers.yaml", "-o", "xml"},
		"validate no file":     {"validate"},
		"definitions bad -o":   {"definitions", "-o", "yaml"},
		"validate bad -o":      {"validate", "-o", "table", "testdata/definitions/bad-jq.yaml"},
		"positional with plan": {"plan", "testdata/manifests/jobset-leader-workers.yaml"},
	} {
		r := gangmap(t, args...)
		assert.Equal(t, ExitUnusable, r.code, name)
		assert.Contains(t, r.stderr, "error: ", name)
		assert.Empty(t, r.stdout, name)
	}
	assert.Contains(t, gangmap(t, "plna").stderr, "Did you mean this?\n\tplan")

	// The usage hint names the command that refused the input, not the root.
	for args, hint := range map[string]string{
		"plan":                     "Run 'gangmap plan --help' for usage.",
		"validate":                 "Run 'gangmap validate --help' for usage.",
		"get":                      "Run 'gangmap get --help' for usage.",
		"plan --bogus":             "Run 'gangmap plan --help' for usage.",
		"describe a/b c/d e":       "Run 'gangmap describe --help' for usage.",
		"plna":                     "Run 'gangmap --help' for usage.",
		"definitions extra":        "Run 'gangmap definitions --help' for usage.",
		"test --run nomatch --bad": "Run 'gangmap test --help' for usage.",
	} {
		r := gangmap(t, strings.Fields(args)...)
		assert.Equal(t, ExitUnusable, r.code, args)
		assert.Contains(t, r.stderr, hint, args)
	}
}

// A live command with no kubeconfig at all says what to do, not client-go's KUBERNETES_MASTER.
func TestNoKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	r := gangmap(t, "get", "jobsets")
	assert.Equal(t, ExitUnusable, r.code)
	assert.Equal(t, "error: no kubeconfig: pass --kubeconfig, set $KUBECONFIG, or create ~/.kube/config\n", r.stderr)
}

// $KUBECONFIG naming a file that does not exist (client-go skips it) is named, not "no kubeconfig" alone.
func TestKubeconfigEnvNamesMissingFile(t *testing.T) {
	missing := t.TempDir() + "/typo.yaml"
	t.Setenv("KUBECONFIG", missing)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	r := gangmap(t, "get", "jobsets")
	assert.Equal(t, ExitUnusable, r.code)
	assert.Equal(t, "error: no kubeconfig: $KUBECONFIG names "+missing+", which cannot be read: pass --kubeconfig or set $KUBECONFIG to an existing file\n", r.stderr)
}

// Against a server that refuses connections, get prints gangmap's own warning and error and
// nothing of client-go's klog output (discovery's "Unhandled Error" lines).
func TestUnreachableClusterNoKlogLines(t *testing.T) {
	kc := t.TempDir() + "/kc.yaml"
	writeFile(t, kc, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n"+
		"contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\ncurrent-context: c\n")
	r := gangmap(t, "get", "jobsets", "--kubeconfig", kc)
	assert.Equal(t, ExitProblems, r.code, r.stderr)
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		assert.Regexp(t, `^(warning|error): `, line)
	}
	assert.Contains(t, r.stderr, "connection refused")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}

func TestNewCommandsInHelpAndAsKubectlPlugin(t *testing.T) {
	r := gangmap(t, "--help")
	for _, sub := range []string{"describe", "get", "test"} {
		assert.Contains(t, r.stdout, "\n  "+sub+" ", "help lists %s", sub)
	}
	for _, sub := range []string{"describe", "get", "test"} {
		h := gangmapAs(t, "/home/me/bin/kubectl-gangmap", sub, "--help")
		assert.Equal(t, ExitOK, h.code, sub)
		assert.Contains(t, h.stdout, "kubectl gangmap "+sub+" ", sub)
		assert.NotContains(t, h.stdout, "kubectl kubectl", sub)
	}
}

// TestCompletionOfKinds: shell completion (cobra's __complete) offers the catalog's kinds for
// describe and get.
func TestCompletionOfKinds(t *testing.T) {
	for _, sub := range []string{"describe", "get"} {
		r := gangmap(t, "__complete", sub, "")
		assert.Equal(t, ExitOK, r.code, sub)
		for _, k := range []string{"jobset\n", "leaderworkerset\n", "raycluster\n"} {
			assert.Contains(t, r.stdout, k, sub)
		}
	}
}
