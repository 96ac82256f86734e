package kaiplugin_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is the directory of the main module's go.mod, found upwards from the test's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/gangmap/gangmap\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod of github.com/gangmap/gangmap above the test")
		dir = parent
	}
}

// dockerInstructions are a Dockerfile's instructions, continuation lines joined and comments
// left out, as "INSTRUCTION arguments".
func dockerInstructions(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	cur := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") && cur == "" {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			cur += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		if s := strings.Join(strings.Fields(cur+l), " "); s != "" {
			out = append(out, s)
		}
		cur = ""
	}
	return out
}

// TestDockerfileBuildsWithTheMakefilesCommand: the gangmap-kai-podgrouper image (no Docker here to
// build it) builds its binary with the go build command make kai-module uses: the Dockerfile's
// only RUN is hack/kai-module.sh in its proxy, build-only mode writing the file the final stage
// copies and runs, and holds no go build of its own; the script has exactly one go build, in
// build_binary, which both its proxy mode and its KAI_SRC mode call; the Makefile's kai-module
// runs the script; the image's Go is the release image's (Dockerfile GO_VERSION, hack/vuln.sh).
func TestDockerfileBuildsWithTheMakefilesCommand(t *testing.T) {
	root := repoRoot(t)
	ins := dockerInstructions(t, filepath.Join(root, "kaipodgrouper/Dockerfile"))
	var runs, copies []string
	var entrypoint, goVersion string
	for _, in := range ins {
		switch verb, args, _ := strings.Cut(in, " "); verb {
		case "RUN":
			runs = append(runs, args)
		case "COPY":
			copies = append(copies, args)
		case "ENTRYPOINT":
			entrypoint = args
		case "ARG":
			if v, ok := strings.CutPrefix(args, "GO_VERSION="); ok {
				goVersion = v
			}
		}
	}
	require.Len(t, runs, 1, "one RUN: the binary's build")
	assert.NotContains(t, runs[0], "go build", "the Dockerfile has no go build of its own")
	assert.Regexp(t, `(^| )KAI_MODULE_PROXY=1 KAI_MODULE_BUILD_ONLY=1 KAI_MODULE_OUT=/out/gangmap-kai-podgrouper bash hack/kai-module.sh$`, runs[0])
	assert.Contains(t, copies, "--from=builder /out/gangmap-kai-podgrouper /usr/local/bin/")
	assert.Equal(t, `["/usr/local/bin/gangmap-kai-podgrouper"]`, entrypoint)
	release := dockerInstructions(t, filepath.Join(root, "Dockerfile"))
	assert.Contains(t, release, "ARG GO_VERSION="+goVersion, "the same Go as the release image")

	script, err := os.ReadFile(filepath.Join(root, "hack/kai-module.sh"))
	require.NoError(t, err)
	builds := regexp.MustCompile(`(?m)^[^#\n]*\bgo build\b.*$`).FindAllString(string(script), -1)
	require.Len(t, builds, 1, "hack/kai-module.sh has one go build")
	assert.Equal(t, `CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out" ./cmd/gangmap-kai-podgrouper`, strings.TrimSpace(builds[0]))
	fn := regexp.MustCompile(`(?s)\nbuild_binary\(\) \{\n([^}]*)\n\}`).FindStringSubmatch(string(script))
	require.NotNil(t, fn, "build_binary() in hack/kai-module.sh")
	assert.Contains(t, fn[1], builds[0])
	assert.Contains(t, string(script), "\n  GOWORK=off build_binary\n", "the proxy mode builds with build_binary, no go.work")
	assert.Contains(t, string(script), "\nexport GOWORK=$work\n", "the KAI_SRC mode uses its go.work")
	assert.Regexp(t, `(?m)^build_binary$`, string(script), "the KAI_SRC mode builds with build_binary")

	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^kai-module:.*\n\tKAI_SRC='\$\(KAI_SRC\)' bash hack/kai-module.sh$`, string(mk))
}
