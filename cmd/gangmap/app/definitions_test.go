package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// definitionsDoc mirrors the -o json output of "gangmap definitions".
type definitionsDoc struct {
	Definitions []struct {
		Name string `json:"name"`
		Kind struct {
			Group, Version, Kind string
		} `json:"kind"`
		Source      string   `json:"source"`
		Origin      string   `json:"origin"`
		Active      bool     `json:"active"`
		NativeInKAI bool     `json:"nativeInKAI"`
		Problems    []string `json:"problems"`
	} `json:"definitions"`
}

func definitionsJSON(t *testing.T, wantCode int, args ...string) (definitionsDoc, result) {
	t.Helper()
	r := gangmap(t, append([]string{"definitions", "-o", "json"}, args...)...)
	require.Equal(t, wantCode, r.code, "stderr: %s", r.stderr)
	var doc definitionsDoc
	decodeOne(t, r.stdout, &doc)
	return doc, r
}

// rows is "name source active" of every listed definition of the JobSet and LeaderWorkerSet
// kinds (the ones these tests override), in listing order; the catalog's other kinds are left out
// so that the tests do not change whenever the catalog grows.
func (d definitionsDoc) rows() []string {
	var out []string
	for _, e := range d.Definitions {
		if e.Kind.Kind != "JobSet" && e.Kind.Kind != "LeaderWorkerSet" {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %v", e.Name, e.Source, e.Active))
	}
	return out
}

// origin is the origin of the listed definition named name.
func (d definitionsDoc) origin(name string) string {
	for _, e := range d.Definitions {
		if e.Name == name {
			return e.Origin
		}
	}
	return ""
}

func TestDefinitionsOfflineListsTheCatalog(t *testing.T) {
	r := gangmap(t, "definitions")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Regexp(t, `^NAME +KIND +SOURCE +ACTIVE +NATIVE-IN-KAI +PROBLEMS\n`, r.stdout)
	// Both kinds are in KAI v0.17's native table (podgrouper/core/native).
	assert.Regexp(t, `(?m)^jobset-x-k8s-io-jobset-v1alpha2 +JobSet.jobset.x-k8s.io/v1alpha2 +catalog +yes +yes +-$`, r.stdout)
	assert.Regexp(t, `(?m)^leaderworkerset-x-k8s-io-leaderworkerset-v1 +LeaderWorkerSet.leaderworkerset.x-k8s.io/v1 +catalog +yes +yes +-$`, r.stdout)

	doc, _ := definitionsJSON(t, ExitOK)
	assert.Equal(t, []string{"jobset-x-k8s-io-jobset-v1alpha2 catalog true", "leaderworkerset-x-k8s-io-leaderworkerset-v1 catalog true"}, doc.rows())
	assert.Equal(t, "catalog:jobset-x-k8s-io-jobset-v1alpha2.yaml", doc.origin("jobset-x-k8s-io-jobset-v1alpha2"))
	for _, e := range doc.Definitions {
		if e.Kind.Kind == "JobSet" {
			assert.True(t, e.NativeInKAI, "KAI v0.17 groups JobSet natively")
		}
	}
}

func TestDefinitionsFileWinsOverCatalog(t *testing.T) {
	doc, _ := definitionsJSON(t, ExitOK, "--definitions", "testdata/definitions/override")
	// Sorted by kind, then precedence: the file JobSet is active, the catalog one is not.
	assert.Equal(t, []string{
		"team-jobset file true",
		"jobset-x-k8s-io-jobset-v1alpha2 catalog false",
		"leaderworkerset-x-k8s-io-leaderworkerset-v1 catalog true",
	}, doc.rows())
	assert.Equal(t, "testdata/definitions/override/team-jobset.yaml#0", doc.origin("team-jobset"))
}

func TestDefinitionsShowProblems(t *testing.T) {
	r := gangmap(t, "definitions", "--definitions", "testdata/definitions/bad-jq.yaml")
	require.Equal(t, ExitOK, r.code)
	// The invalid file definition is listed, inactive, with its problem; the catalog JobSet wins.
	assert.Regexp(t, `(?m)^bad-jq +JobSet.jobset.x-k8s.io/v1alpha2 +file +no +yes +1$`, r.stdout)
	assert.Regexp(t, `(?m)^jobset-x-k8s-io-jobset-v1alpha2 +JobSet\.\S+ +catalog +yes `, r.stdout)
	assert.Contains(t, r.stdout, "\nProblems:\n  bad-jq (testdata/definitions/bad-jq.yaml#0): definition \"bad-jq\"")
	assert.Contains(t, r.stdout, "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath")
}

// fakeAPIServer answers the Karta list of a cluster with the given status and body.
func fakeAPIServer(t *testing.T, status int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/apis/run.ai/v1alpha1/kartas" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// kubeconfig writes a kubeconfig with one context per server ("ctx-0", "ctx-1", ...); the current
// context is the first.
func kubeconfig(t *testing.T, servers ...*httptest.Server) string {
	t.Helper()
	cfg := "apiVersion: v1\nkind: Config\ncurrent-context: ctx-0\nusers:\n- name: u\n  user: {token: test}\nclusters:\n"
	for i, s := range servers {
		cfg += fmt.Sprintf("- name: c%d\n  cluster: {server: %q}\n", i, s.URL)
	}
	cfg += "contexts:\n"
	for i := range servers {
		cfg += fmt.Sprintf("- name: ctx-%d\n  context: {cluster: c%d, user: u}\n", i, i)
	}
	path := t.TempDir() + "/kubeconfig"
	writeFile(t, path, cfg)
	return path
}

// kartaList is a KartaList holding the team-jobset test definition, renamed as a cluster object.
func kartaList(t *testing.T, name string) string {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(readFile(t, "testdata/definitions/override/team-jobset.yaml")))
	require.NoError(t, err)
	var karta map[string]any
	require.NoError(t, json.Unmarshal(js, &karta))
	karta["metadata"] = map[string]any{"name": name, "uid": "u-1", "resourceVersion": "7", "generation": 1}
	b, err := json.Marshal(map[string]any{"apiVersion": "run.ai/v1alpha1", "kind": "KartaList", "metadata": map[string]any{"resourceVersion": "7"}, "items": []any{karta}})
	require.NoError(t, err)
	return string(b)
}

func TestDefinitionsFromCluster(t *testing.T) {
	ok := fakeAPIServer(t, http.StatusOK, kartaList(t, "cluster-jobset"))
	noCRD := fakeAPIServer(t, http.StatusNotFound, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
	kc := kubeconfig(t, noCRD, ok) // the current context has no CRD; --context picks the other

	doc, r := definitionsJSON(t, ExitOK, "--kubeconfig", kc, "--context", "ctx-1", "--definitions", "testdata/definitions/override")
	assert.Empty(t, r.stderr)
	// cluster > file > catalog for the JobSet kind.
	assert.Equal(t, []string{
		"cluster-jobset cluster true",
		"team-jobset file false",
		"jobset-x-k8s-io-jobset-v1alpha2 catalog false",
		"leaderworkerset-x-k8s-io-leaderworkerset-v1 catalog true",
	}, doc.rows())
	assert.Equal(t, "cluster:cluster-jobset", doc.origin("cluster-jobset"))
}

func TestDefinitionsClusterWithoutKartaCRD(t *testing.T) {
	noCRD := fakeAPIServer(t, http.StatusNotFound, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
	doc, r := definitionsJSON(t, ExitOK, "--kubeconfig", kubeconfig(t, noCRD))
	assert.Equal(t, "warning: the Karta CRD (kartas.run.ai) is not installed in the cluster; listing the other sources only\n", r.stderr)
	assert.Equal(t, []string{"jobset-x-k8s-io-jobset-v1alpha2 catalog true", "leaderworkerset-x-k8s-io-leaderworkerset-v1 catalog true"}, doc.rows())
}

func TestDefinitionsClusterForbiddenExit1(t *testing.T) {
	forbidden := fakeAPIServer(t, http.StatusForbidden, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"kartas.run.ai is forbidden"}`)
	doc, r := definitionsJSON(t, ExitProblems, "--cluster", "--kubeconfig", kubeconfig(t, forbidden))
	assert.Contains(t, r.stderr, "warning: cannot list Karta objects from the cluster: kartas.run.ai at http")
	assert.Contains(t, r.stderr, "forbidden")
	assert.Len(t, doc.rows(), 2, "the other sources are still listed")
}

func TestDefinitionsBadKubeconfigExit2(t *testing.T) {
	r := gangmap(t, "definitions", "--kubeconfig", t.TempDir()+"/missing")
	assert.Equal(t, ExitUnusable, r.code)
	assert.Contains(t, r.stderr, "error: loading the kubeconfig:")
	assert.Empty(t, r.stdout)

	r = gangmap(t, "definitions", "--kubeconfig", kubeconfig(t, fakeAPIServer(t, http.StatusOK, "{}")), "--context", "nope")
	assert.Equal(t, ExitUnusable, r.code)
	assert.Contains(t, r.stderr, `context "nope" does not exist`)
}

// Two file definitions of one kind conflict: the conflict is a problem of each, and the table
// says it once, naming both, with the kind written as Kind.group/version.
func TestDefinitionsConflictSaidOnce(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("testdata/definitions/override/team-jobset.yaml")
	require.NoError(t, err)
	writeFile(t, dir+"/a.yaml", string(b))
	writeFile(t, dir+"/b.yaml", strings.Replace(string(b), "name: team-jobset", "name: team-jobset-copy", 1))
	r := gangmap(t, "definitions", "--definitions", dir)
	problems := r.stdout[strings.Index(r.stdout, "Problems:"):]
	assert.Equal(t, 1, strings.Count(problems, "JobSet.jobset.x-k8s.io/v1alpha2"), problems)
	line := strings.SplitN(problems, "\n", 3)[1]
	owners := line[:strings.Index(line, ": 2 file definitions")]
	assert.ElementsMatch(t, []string{"team-jobset (" + dir + "/a.yaml#0)", "team-jobset-copy (" + dir + "/b.yaml#0)"}, strings.Split(strings.TrimSpace(owners), ", "))
	assert.NotContains(t, r.stdout, "Kind=")
}

// A conflict is one problem of each definition in it: -o json lists it exactly once per
// definition (it was listed twice: once by origin, once by kind and source).
func TestDefinitionsJSONListsConflictOncePerDefinition(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("testdata/definitions/override/team-jobset.yaml")
	require.NoError(t, err)
	writeFile(t, dir+"/a.yaml", string(b))
	writeFile(t, dir+"/b.yaml", strings.Replace(string(b), "name: team-jobset", "name: team-jobset-copy", 1))
	r := gangmap(t, "definitions", "--definitions", dir, "-o", "json")
	var doc struct {
		Definitions []struct {
			Name     string   `json:"name"`
			Source   string   `json:"source"`
			Active   bool     `json:"active"`
			Problems []string `json:"problems"`
		} `json:"definitions"`
	}
	decodeOne(t, r.stdout, &doc)
	conflict := `2 file definitions for JobSet.jobset.x-k8s.io/v1alpha2: ["team-jobset" (` + dir + `/a.yaml#0) "team-jobset-copy" (` + dir + `/b.yaml#0)]; none is used until one is removed`
	got := map[string][]string{}
	for _, d := range doc.Definitions {
		if d.Source == "file" {
			got[d.Name] = d.Problems
			assert.False(t, d.Active, d.Name)
		}
	}
	assert.Equal(t, map[string][]string{"team-jobset": {conflict}, "team-jobset-copy": {conflict}}, got)
}
