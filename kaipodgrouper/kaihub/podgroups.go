package kaihub

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kaiv2alpha2 "github.com/kai-scheduler/KAI-scheduler/pkg/apis/scheduling/v2alpha2"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaiplugin"
)

// PodGroupReader reads KAI's typed PodGroup through r (KAI's manager client: the PodGroup
// informer KAI's handler reads) and returns it in gangmap's copy of the type, converted through
// their common JSON (the CRD's). kaiplugin asks for it only for a pod whose metadata has a
// deferred sub-group (the start order), so the conversion is rare.
func PodGroupReader(r client.Reader) kaiplugin.PodGroupReader {
	return func(ctx context.Context, namespace, name string) (*v2alpha2.PodGroup, error) {
		kpg := &kaiv2alpha2.PodGroup{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, kpg); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		b, err := json.Marshal(kpg)
		if err != nil {
			return nil, fmt.Errorf("PodGroup %s/%s: %w", namespace, name, err)
		}
		out := &v2alpha2.PodGroup{}
		if err := json.Unmarshal(b, out); err != nil {
			return nil, fmt.Errorf("PodGroup %s/%s: %w", namespace, name, err)
		}
		return out, nil
	}
}
