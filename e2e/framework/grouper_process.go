package framework

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// BuildGrouperBinary builds ./cmd/gangmap-grouper of the module into dir and returns its path.
func BuildGrouperBinary(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gangmap-grouper")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/gangmap-grouper")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/gangmap-grouper: %w\n%s", err, out)
	}
	return bin, nil
}

func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(mod), nil
}

// GrouperProcess is gangmap-grouper running as a child process against a control plane, with
// its metrics on a free localhost port and its output in a log file. It can be killed (SIGKILL)
// and started again with the same arguments.
type GrouperProcess struct {
	Bin  string
	Args []string
	// MetricsURL is http://127.0.0.1:<port>/metrics, or https:// when the arguments keep the
	// grouper's default --metrics-secure.
	MetricsURL string
	// MetricsToken is the bearer token sent with every scrape of secure metrics (a ServiceAccount
	// token the API server's TokenReview accepts, allowed get on /metrics).
	MetricsToken string
	// LogPath holds the output of every run, appended.
	LogPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan error
}

// StartGrouperProcess runs bin with --kubeconfig kubeconfig, metrics on a free localhost port as
// plain HTTP (--metrics-secure=false, the grouper's local-use mode), probes and the webhook off,
// and extra arguments, and waits until its metrics endpoint answers. Extra arguments that turn
// --metrics-secure back on need StartSecureGrouperProcess's token.
func StartGrouperProcess(ctx context.Context, bin, kubeconfig, logDir string, extra ...string) (*GrouperProcess, error) {
	return StartSecureGrouperProcess(ctx, bin, kubeconfig, "", logDir, extra...)
}

// StartSecureGrouperProcess is StartGrouperProcess with metricsToken sent as the bearer token of
// every scrape, which is HTTPS (any certificate accepted: the grouper's is self-signed) when the
// last --metrics-secure of extra is true.
func StartSecureGrouperProcess(ctx context.Context, bin, kubeconfig, metricsToken, logDir string, extra ...string) (*GrouperProcess, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := append([]string{"--kubeconfig", kubeconfig, "--metrics-bind-address", addr, "--metrics-secure=false", "--health-probe-bind-address", "0", "--webhook-port", "0"}, extra...)
	scheme := "http"
	if metricsSecure(args) {
		scheme = "https"
	}
	g := &GrouperProcess{Bin: bin, Args: args, MetricsURL: scheme + "://" + addr + "/metrics", MetricsToken: metricsToken, LogPath: filepath.Join(logDir, "gangmap-grouper.log")}
	if err := g.Start(ctx); err != nil {
		return nil, err
	}
	return g, nil
}

// metricsSecure is the value of the last --metrics-secure in args (a bare flag is true).
func metricsSecure(args []string) bool {
	secure := false
	for _, a := range args {
		switch {
		case a == "--metrics-secure":
			secure = true
		case strings.HasPrefix(a, "--metrics-secure="):
			secure, _ = strconv.ParseBool(strings.TrimPrefix(a, "--metrics-secure="))
		}
	}
	return secure
}

// FreePort returns a localhost TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start starts the process (again) and waits until its metrics endpoint answers.
func (g *GrouperProcess) Start(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd != nil {
		return errors.New("the grouper process is running")
	}
	logf, err := os.OpenFile(g.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "\n===== %s start %s %s\n", time.Now().Format(time.RFC3339Nano), g.Bin, strings.Join(g.Args, " "))
	cmd := exec.Command(g.Bin, g.Args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); logf.Close() }()
	g.cmd, g.done = cmd, done
	err = WaitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			done <- err
			return false, fmt.Errorf("gangmap-grouper exited: %v (log %s)", err, g.LogPath)
		default:
		}
		_, err := g.scrape(ctx, 5*time.Second)
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the grouper's metrics endpoint: %w", err)
	}
	return nil
}

// Running reports whether the process started by the last Start is still running (it has not
// exited on its own nor been stopped).
func (g *GrouperProcess) Running() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd == nil {
		return false
	}
	select {
	case err := <-g.done:
		g.done <- err
		return false
	default:
		return true
	}
}

// PID is the running process's id, or 0.
func (g *GrouperProcess) PID() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd == nil {
		return 0
	}
	return g.cmd.Process.Pid
}

// Kill sends SIGKILL (no graceful shutdown at all) and waits for the process to be gone.
func (g *GrouperProcess) Kill() error { return g.signal(syscall.SIGKILL) }

// Stop sends SIGTERM and waits (up to 30s, then SIGKILL).
func (g *GrouperProcess) Stop() error { return g.signal(syscall.SIGTERM) }

func (g *GrouperProcess) signal(sig syscall.Signal) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd == nil {
		return nil
	}
	cmd, done := g.cmd, g.done
	g.cmd, g.done = nil, nil
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}

// PeakRSSBytes is the process's peak resident set size so far (VmHWM in /proc/<pid>/status).
func (g *GrouperProcess) PeakRSSBytes() (int64, error) {
	pid := g.PID()
	if pid == 0 {
		return 0, errors.New("the grouper process is not running")
	}
	return vmField(pid, "VmHWM")
}

// RSSBytes is the process's current resident set size (VmRSS).
func (g *GrouperProcess) RSSBytes() (int64, error) {
	pid := g.PID()
	if pid == 0 {
		return 0, errors.New("the grouper process is not running")
	}
	return vmField(pid, "VmRSS")
}

// ResidentParts splits the process's resident set (smaps_rollup's Rss) into its anonymous
// pages (the Go heap, stacks and runtime metadata, which the Go memory limit bounds) and the rest
// (file-backed pages, mostly the binary's text and tables, which it does not), in bytes.
func (g *GrouperProcess) ResidentParts() (anonymous, fileBacked int64, err error) {
	pid := g.PID()
	if pid == 0 {
		return 0, 0, errors.New("the grouper process is not running")
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, err
	}
	var rss int64
	for _, line := range strings.Split(string(data), "\n") {
		fs := strings.Fields(line)
		if len(fs) != 3 || fs[2] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(fs[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/smaps_rollup: %q: %w", pid, line, err)
		}
		switch fs[0] {
		case "Rss:":
			rss = kb * 1024
		case "Anonymous:":
			anonymous = kb * 1024
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/smaps_rollup has no Rss", pid)
	}
	return anonymous, rss - anonymous, nil
}

func vmField(pid int, name string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, name+":") {
			continue
		}
		fs := strings.Fields(strings.TrimPrefix(line, name+":"))
		if len(fs) != 2 || fs[1] != "kB" {
			return 0, fmt.Errorf("unexpected %q", line)
		}
		kb, err := strconv.ParseInt(fs[0], 10, 64)
		return kb * 1024, err
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", name, pid)
}

// Metrics scrapes the process's metrics endpoint and returns every sample by its name with
// labels as printed (e.g. `gangmap_podgroup_writes_total{result="Updated"}`).
func (g *GrouperProcess) Metrics(ctx context.Context) (map[string]float64, error) {
	return g.scrape(ctx, 5*time.Second)
}

// MetricsWithin is Metrics with a scrape timeout of its own: a grouper with series for 10,000
// workloads serves about 11 MB of metrics, which takes seconds (the scale benchmark scrapes it
// as Prometheus would, with a long timeout and seconds apart, not every 100 ms).
func (g *GrouperProcess) MetricsWithin(ctx context.Context, timeout time.Duration) (map[string]float64, error) {
	return g.scrape(ctx, timeout)
}

func (g *GrouperProcess) scrape(ctx context.Context, timeout time.Duration) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := g.GetMetrics(ctx, g.MetricsToken)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", g.MetricsURL, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// GetMetrics GETs the metrics endpoint with token as the bearer token (none when empty) and
// returns the response, whatever its status. Over HTTPS any certificate is accepted: the test is
// of authentication and authorization, and the grouper's certificate is self-signed.
func (g *GrouperProcess) GetMetrics(ctx context.Context, token string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.MetricsURL, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return metricsClient.Do(req)
}

// metricsClient scrapes: any certificate (self-signed), HTTP/1.1.
var metricsClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a self-signed local test server

// parseMetrics reads the Prometheus text format: "name{labels} value" per line.
func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, s.Err()
}

// Sum adds every sample of metrics whose name (before any labels) is name and whose labels
// contain each of the given `key="value"` pairs.
func Sum(metrics map[string]float64, name string, labels ...string) float64 {
	var total float64
	for k, v := range metrics {
		base, rest, _ := strings.Cut(k, "{")
		if base != name {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(rest, l) {
				ok = false
				break
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

// GatherMetrics returns what the metrics endpoint of a grouper running in this process serves:
// controller-runtime's registry through the same promhttp handler, parsed as Metrics parses a
// scrape.
func GatherMetrics() (map[string]float64, error) {
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("metrics handler: %d %s", rec.Code, rec.Body.String())
	}
	return parseMetrics(rec.Body)
}
