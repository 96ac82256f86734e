package realkai

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gangmap/gangmap/e2e/framework"
)

// Process is one child process of the harness (a KAI binary or kwok) with its output appended to
// a log file. It can be stopped (SIGTERM), killed (SIGKILL) and started again with the same
// arguments; every run is marked in the log with a "===== <time> start" line.
type Process struct {
	// Name is a short name for messages ("scheduler", "binder", "podgrouper", "kwok").
	Name string
	// Bin is the binary's path and Args its arguments.
	Bin  string
	Args []string
	// Env is added to the harness's own environment (KEY=value).
	Env []string
	// LogPath holds the output of every run, appended.
	LogPath string
	// ReadyURL, when set, is polled with GET until it answers 200 before Start returns.
	ReadyURL string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan error
}

// ansi matches the terminal colour codes KAI's logger writes even into a file.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// startTimeout bounds the wait for a started process's ReadyURL (KAI's scheduler syncs its
// informers before it serves; on a loaded 2-core machine that takes seconds).
const startTimeout = 2 * time.Minute

// Start starts the process (again) and waits until ReadyURL answers, or fails with the log's tail
// when the process exits first or does not get ready within two minutes.
func (p *Process) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s is running", p.Name)
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "\n===== %s start %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), p.Bin, strings.Join(p.Args, " "))
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s (%s): %w", p.Name, p.Bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); logf.Close() }()
	p.cmd, p.done = cmd, done
	if p.ReadyURL == "" {
		return nil
	}
	err = framework.WaitFor(ctx, startTimeout, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			done <- err
			return false, fmt.Errorf("%s exited: %v", p.Name, err)
		default:
		}
		return HTTPOK(ctx, p.ReadyURL), nil
	})
	if err != nil {
		return fmt.Errorf("%s not ready at %s: %w\n--- last lines of %s:\n%s", p.Name, p.ReadyURL, err, p.LogPath, p.Tail(40))
	}
	return nil
}

// HTTPOK reports whether url answers 200 within 2 s (a probe endpoint: /readyz, /healthz).
func HTTPOK(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Running reports whether the process of the last Start is still running.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case err := <-p.done:
		p.done <- err
		return false
	default:
		return true
	}
}

// Exited reports whether the process of the last Start ended on its own (crashed or exited):
// false when it runs, was never started, or was stopped or killed through Stop or Kill.
func (p *Process) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL (no graceful shutdown) and waits until the process is gone.
func (p *Process) Kill() error { return p.signal(syscall.SIGKILL) }

// Stop sends SIGTERM and waits up to 20 s, then SIGKILL.
func (p *Process) Stop() error { return p.signal(syscall.SIGTERM) }

func (p *Process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	cmd, done := p.cmd, p.done
	p.cmd, p.done = nil, nil
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}

// Tail is the last n lines of the process's log (every run), for failure messages.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(ansi.ReplaceAllString(string(b), ""), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Grep returns the log lines (every run) that contain every one of substrs, at most max of them,
// the last ones: e.g. the scheduler's lines about one PodGroup.
func (p *Process) Grep(max int, substrs ...string) []string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return []string{fmt.Sprintf("(no log: %v)", err)}
	}
	var out []string
	s := bufio.NewScanner(bytes.NewReader(b))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := ansi.ReplaceAllString(s.Text(), "")
		all := true
		for _, sub := range substrs {
			if !strings.Contains(line, sub) {
				all = false
				break
			}
		}
		if all {
			out = append(out, line)
		}
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}
