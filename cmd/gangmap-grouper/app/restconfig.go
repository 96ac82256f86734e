package app

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RestConfig finds the cluster as controller-runtime's config.GetConfig does, then applies --qps
// and --burst: --kubeconfig; else $KUBECONFIG (one or more files, merged); else the in-cluster
// config; else ~/.kube/config. Unlike config.GetConfig it logs nothing (no error log with a stack
// trace when the in-cluster config is missing) and says in one line what it tried when it finds
// nothing.
func (o *Options) RestConfig() (*rest.Config, error) {
	cfg, err := o.loadRestConfig()
	if err == nil {
		cfg.QPS, cfg.Burst = o.QPS, o.Burst
	}
	return cfg, err
}

// inClusterConfig is rest.InClusterConfig; tests replace it.
var inClusterConfig = rest.InClusterConfig

// loadRestConfig is RestConfig's lookup: client-go's loading rules on the files it settles on
// (--kubeconfig's; else $KUBECONFIG's; else, when not in a cluster, ~/.kube/config's), and an
// error that names what it tried.
func (o *Options) loadRestConfig() (*rest.Config, error) {
	rules, where := &clientcmd.ClientConfigLoadingRules{ExplicitPath: o.Kubeconfig}, "--kubeconfig "+o.Kubeconfig
	env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	var inClusterErr error
	switch {
	case o.Kubeconfig != "":
	case env != "":
		// As config.GetConfig: with $KUBECONFIG set, the in-cluster config is not tried.
		rules.Precedence, where = filepath.SplitList(env), "$KUBECONFIG ("+env+")"
	default:
		cfg, err := inClusterConfig()
		if err == nil {
			return cfg, nil
		}
		home, herr := homeKubeconfig()
		if herr != nil {
			return nil, herr
		}
		rules.Precedence, where, inClusterErr = []string{home}, home, err
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	switch {
	case err == nil:
		return cfg, nil
	case !clientcmd.IsEmptyConfig(err) || o.Kubeconfig != "":
		return nil, fmt.Errorf("%s: %w", where, err)
	case inClusterErr == nil: // $KUBECONFIG's files
		return nil, fmt.Errorf("%s: no configuration there (missing or empty files)", where)
	case !errors.Is(inClusterErr, rest.ErrNotInCluster):
		// In a pod, but its service account credentials are unusable: say so rather than
		// blame the missing ~/.kube/config.
		return nil, fmt.Errorf("in-cluster config: %w", inClusterErr)
	}
	state := "does not exist"
	if _, err := os.Stat(where); err == nil {
		state = "holds no configuration"
	}
	return nil, fmt.Errorf("no Kubernetes configuration: not running in a cluster, and neither --kubeconfig nor $KUBECONFIG is set and %s %s", where, state)
}

// homeKubeconfig is ~/.kube/config, with $HOME read now (client-go reads it once at start) and,
// as config.GetConfig does, the user's home directory when $HOME is unset.
func homeKubeconfig() (string, error) {
	home, ok := os.LookupEnv("HOME")
	if !ok {
		u, err := user.Current()
		if err != nil {
			return "", fmt.Errorf("no Kubernetes configuration: $HOME is unset and the current user is unknown: %w", err)
		}
		home = u.HomeDir
	}
	return filepath.Join(home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName), nil
}
