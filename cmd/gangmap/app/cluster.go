package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gangmap/gangmap/definitions"
)

// clusterRequestTimeout bounds each request to the API server, so an unreachable cluster fails
// the listing instead of hanging it.
const clusterRequestTimeout = 30 * time.Second

// errNoKartaCRD says the cluster does not serve the Karta resource.
var errNoKartaCRD = errors.New("the Karta CRD is not installed")

// configError is a kubeconfig that does not load: unusable input, not a cluster problem.
type configError struct{ err error }

func (e *configError) Error() string {
	if clientcmd.IsEmptyConfig(e.err) {
		// client-go's own text suggests KUBERNETES_MASTER, which nothing here reads.
		return "no kubeconfig: pass --kubeconfig, set $KUBECONFIG, or create ~/.kube/config"
	}
	return "loading the kubeconfig: " + e.err.Error()
}
func (e *configError) Unwrap() error { return e.err }

func isConfigError(err error) bool {
	var ce *configError
	return errors.As(err, &ce)
}

// listKartas lists every Karta of the cluster through client and converts each with
// definitions.FromUnstructured. A Karta that does not convert is reported on warn and skipped.
// Errors: errNoKartaCRD when the cluster does not serve kartas.run.ai, or the API error as it is.
func listKartas(ctx context.Context, client dynamic.Interface, warn io.Writer) ([]*definitions.Loaded, error) {
	list, err := client.Resource(definitions.GroupVersionResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errNoKartaCRD
		}
		return nil, err
	}
	out := make([]*definitions.Loaded, 0, len(list.Items))
	for i := range list.Items {
		l, err := definitions.FromUnstructured(&list.Items[i])
		if err != nil {
			fmt.Fprintf(warn, "warning: skipping Karta %q from the cluster: %v\n", list.Items[i].GetName(), err)
			continue
		}
		out = append(out, l)
	}
	return out, nil
}

// kartaResourceName is "kartas.run.ai", the resource the Karta CRD serves.
func kartaResourceName() string {
	return definitions.GroupVersionResource.GroupResource().String()
}
