package app

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

// runMain runs Main with args and returns its exit code, stdout and stderr.
func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr syncBuffer
	code := Main(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// syncBuffer is a bytes.Buffer safe for concurrent writers: Main points the process-wide logger
// at stderr, and servers started by later tests of this package log through it from several
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const usageHint = "Run 'gangmap-grouper --help' for usage.\n"

func TestMainUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		wantStderr string
	}{
		{[]string{"--bogus"}, "error: unknown flag: --bogus\n" + usageHint},
		{[]string{"--zap-log-level", "loud"}, "error: invalid argument \"loud\" for \"--zap-log-level\" flag: invalid log level \"loud\"\n" + usageHint},
		{[]string{"--qps", "fast"}, "error: invalid argument \"fast\" for \"--qps\" flag: strconv.ParseFloat: parsing \"fast\": invalid syntax\n" + usageHint},
		{[]string{"extra-positional"}, "error: unexpected positional argument(s) [\"extra-positional\"]: gangmap-grouper takes flags only\n" + usageHint},
		{[]string{"--webhook-port=0", "--", "a", "b"}, "error: unexpected positional argument(s) [\"a\" \"b\"]: gangmap-grouper takes flags only\n" + usageHint},
		{[]string{"--webhook-port=0", "--max-concurrent-reconciles=0", "--definitions-poll=-1s"},
			"error: --definitions-poll: must be a positive duration such as 10s, got -1s\n" +
				"error: --max-concurrent-reconciles: must be at least 1, got 0\n" + usageHint},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runMain(t, tc.args...)
			if code != ExitUsage {
				t.Errorf("exit code %d, want %d", code, ExitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if stderr != tc.wantStderr {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr, tc.wantStderr)
			}
		})
	}
}

func TestMainHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		code, stdout, stderr := runMain(t, arg)
		if code != ExitOK {
			t.Errorf("%s: exit code %d, want 0", arg, code)
		}
		if stderr != "" {
			t.Errorf("%s: stderr %q, want nothing", arg, stderr)
		}
		if !strings.HasPrefix(stdout, "Usage: gangmap-grouper [flags]\n") || !strings.Contains(stdout, "\n      --webhook-self-signed ") {
			t.Errorf("%s: stdout is not the usage:\n%s", arg, stdout)
		}
	}
}

// TestHelpShowsEveryDefault: pflag prints "(default X)" for non-zero defaults only; the others
// must say theirs in the help text.
func TestHelpShowsEveryDefault(t *testing.T) {
	fs := NewFlagSet(DefaultOptions(), &bytes.Buffer{})
	lines := strings.Split(strings.TrimRight(fs.FlagUsages(), "\n"), "\n")
	for _, line := range lines {
		if !strings.Contains(line, "(default") {
			t.Errorf("help line shows no default: %s", strings.TrimSpace(line))
		}
	}
	flags := 0
	fs.VisitAll(func(*pflag.Flag) { flags++ })
	if len(lines) != flags {
		t.Errorf("%d help lines for %d flags: want one line per flag", len(lines), flags)
	}
}

// noCluster makes RestConfig find nothing: no $KUBECONFIG, not in a cluster, an empty $HOME.
func noCluster(t *testing.T) (home string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", home)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	orig := inClusterConfig
	inClusterConfig = func() (*rest.Config, error) { return nil, rest.ErrNotInCluster }
	t.Cleanup(func() { inClusterConfig = orig })
	return home
}

func TestMainNoKubernetesConfiguration(t *testing.T) {
	home := noCluster(t)
	code, stdout, stderr := runMain(t, "--webhook-port=0")
	if code != ExitError {
		t.Errorf("exit code %d, want %d", code, ExitError)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	want := "error: no Kubernetes configuration: not running in a cluster, and neither --kubeconfig nor $KUBECONFIG is set and " +
		filepath.Join(home, ".kube", "config") + " does not exist\n"
	if stderr != want {
		t.Errorf("stderr (one line, no log, no stack trace):\n%s\nwant:\n%s", stderr, want)
	}
}

func TestMainMissingWebhookCertificate(t *testing.T) {
	noCluster(t)
	dir := t.TempDir()
	code, stdout, stderr := runMain(t, "--webhook-cert-dir", dir)
	if code != ExitUsage {
		t.Errorf("exit code %d, want %d", code, ExitUsage)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	want := "error: --webhook-cert-dir: " + dir + " has no tls.crt and no tls.key; the webhook (--webhook-port=9443) needs its serving certificate there at start: " +
		"mount one (cert-manager or a Secret) or point --webhook-cert-dir at it, or pass --webhook-self-signed to have the grouper issue its own, " +
		"or --webhook-port=0 to disable the webhook\n" + usageHint
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
}

func TestMainMissingDefinitions(t *testing.T) {
	noCluster(t)
	missing := filepath.Join(t.TempDir(), "nope")
	code, _, stderr := runMain(t, "--webhook-port=0", "--definitions", missing)
	if code != ExitUsage {
		t.Errorf("exit code %d, want %d", code, ExitUsage)
	}
	want := "error: --definitions: " + missing + " does not exist (or is a broken symbolic link)\n" + usageHint
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
}
