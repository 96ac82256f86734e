// Package app is the gangmap command line: plan gangs for workload manifests offline, validate
// Workload Map definitions, and list the definitions gangmap would use. main calls Run; tests
// call Run in-process with their own writers.
package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
	"github.com/gangmap/gangmap/podgrouper/core/native"
)

// Exit codes of every gangmap command.
const (
	// ExitOK: the command did what was asked and found nothing wrong.
	ExitOK = 0
	// ExitProblems: the command ran, and what it examined has problems (a workload with no
	// definition or whose plan failed, an invalid definition, a cluster that could not be read).
	ExitProblems = 1
	// ExitUnusable: the input could not be used at all (a missing file, invalid YAML, a bad flag).
	ExitUnusable = 2
)

// exitError carries an exit code out of a cobra RunE. An empty message means the command has
// already said everything it had to say.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// fail returns an exitError whose message is printed on stderr as "error: <msg>".
func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// exitCode returns an exitError that prints nothing more.
func exitCode(code int) error {
	if code == ExitOK {
		return nil
	}
	return &exitError{code: code}
}

// Run executes gangmap with args (without the program name), writing to stdout and stderr, and
// returns the process exit code: ExitOK, ExitProblems or ExitUnusable.
func Run(args []string, stdout, stderr io.Writer) int {
	return runAs(os.Args[0], args, stdout, stderr)
}

// runAs is Run for a program invoked as argv0 (which decides the root's name: see rootUse).
func runAs(argv0 string, args []string, stdout, stderr io.Writer) int {
	// client-go logs some failures through klog before returning them (discovery's "Unhandled
	// Error" against an unreachable server): the commands report every error themselves.
	klog.SetLogger(logr.Discard())
	// The root's flags set the native table for this run only.
	defer func() {
		kaiNativeTable, kaiRelease = native.DefaultTable(), kairelease.MustParse(native.DefaultRelease)
		nativeFlagsGiven = false
	}()
	// What a workload's author wrote reaches the terminal only as text (controlEscaper).
	out, errOut := &controlEscaper{w: stdout}, &controlEscaper{w: stderr}
	defer out.flush()
	defer errOut.flush()
	stdout, stderr = out, errOut
	root := NewRootCommand(rootUse(argv0))
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintf(stderr, "error: %s\n", ee.msg)
		}
		return ee.code
	}
	// Anything else comes from cobra itself: an unknown command or flag, a wrong number of
	// arguments. It is a usage error. (ExecuteC returns the root, never nil, when it finds no command.)
	fmt.Fprintf(stderr, "error: %v\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
	return ExitUnusable
}

// rootUse is the root command's name: "kubectl gangmap" when the binary runs as a kubectl
// plugin (its base name starts with "kubectl-": kubectl runs "kubectl-gangmap" on PATH for
// "kubectl gangmap"), else "gangmap".
func rootUse(argv0 string) string {
	if name, ok := strings.CutPrefix(filepath.Base(argv0), "kubectl-"); ok {
		return "kubectl " + name
	}
	return "gangmap"
}

// NewRootCommand builds the gangmap command tree. use is the root's name as the user types it:
// "gangmap", or "kubectl gangmap" as a kubectl plugin. The command's own name stays "gangmap" (a
// cobra name is one word, and completion scripts are generated for it); help, usage lines and
// examples show use, through cobra's display-name annotation.
func NewRootCommand(use string) *cobra.Command {
	root := &cobra.Command{
		Use:   "gangmap",
		Short: "Plan KAI Scheduler gangs for workload kinds KAI has no plugin for",
		Long: `gangmap is a fallback pod-grouper for KAI Scheduler: for workload kinds KAI has no
native plugin for, it reads Workload Map (Karta) definitions and plans KAI PodGroups (gangs).

Installed as a binary named kubectl-gangmap on your PATH, it also runs as "kubectl gangmap".`,
		Example: examples(use,
			"gangmap plan -f examples/jobset-leader-workers.yaml",
			"gangmap validate --strict my-karta.yaml",
			"gangmap definitions --definitions ./kartas/",
			"# As a kubectl plugin: a binary named kubectl-gangmap on PATH",
			"go build -o ~/bin/kubectl-gangmap github.com/gangmap/gangmap/cmd/gangmap",
			"kubectl gangmap plan -f examples/jobset-leader-workers.yaml",
		),
		SilenceUsage:  true,
		SilenceErrors: true,
		// Args stays unset: cobra then rejects "gangmap foo" as an unknown command (with a
		// suggestion) instead of printing the help and exiting 0.
	}
	if use != root.Name() {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: use}
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fail(ExitUnusable, "%v\nRun '%s --help' for usage.", err, c.CommandPath())
	})
	nf := &nativeFlags{kaiVersion: native.DefaultRelease}
	nf.addFlags(root)
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		nativeFlagsGiven = c.Flags().Changed("kai-version") || c.Flags().Changed("native-kinds-add") || c.Flags().Changed("native-kinds-remove")
		r, err := nf.apply()
		if err != nil {
			return fail(ExitUnusable, "%v\nRun '%s --help' for usage.", err, c.CommandPath())
		}
		if r.Warning != "" {
			fmt.Fprintf(c.ErrOrStderr(), "warning: --kai-version: %s\n", r.Warning)
		}
		return nil
	}
	root.AddCommand(newPlanCommand(use), newValidateCommand(use), newDefinitionsCommand(use), newDescribeCommand(use), newGetCommand(use), newTestCommand(use), newOnboardCommand(use), newKartaCommand(use), newVersionCommand())
	return root
}

// examples renders a cobra Example block: one command per line, indented, with a leading
// "gangmap " replaced by the root's name ("kubectl gangmap " as a kubectl plugin). Lines that
// start with "#" are comments and are kept as they are.
func examples(use string, lines ...string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if rest, ok := strings.CutPrefix(l, "gangmap "); ok {
			l = use + " " + rest
		}
		out[i] = "  " + l
	}
	return strings.Join(out, "\n")
}
