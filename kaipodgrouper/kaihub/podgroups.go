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
		out := &v2alpha2.PodGroup{}
		if err := (PodGroupClient{KAI: r}).Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, out); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		return out, nil
	}
}

// PodGroupClient is a client.Reader of gangmap's copy of the PodGroup type over a reader of KAI's
// (KAI's manager client, whose scheme has KAI's type for the GVK, not gangmap's): a Get of a
// *v2alpha2.PodGroup or a List of a *v2alpha2.PodGroupList reads KAI's typed objects and converts
// them through their common JSON (the CRD's; TestKAITypesMatchGangmapsCopy). Every other object
// is read through KAI as it is. The workload metrics read PodGroup conditions with it.
type PodGroupClient struct {
	KAI client.Reader
}

var _ client.Reader = PodGroupClient{}

// Get implements client.Reader.
func (c PodGroupClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	pg, ok := obj.(*v2alpha2.PodGroup)
	if !ok {
		return c.KAI.Get(ctx, key, obj, opts...)
	}
	kpg := &kaiv2alpha2.PodGroup{}
	if err := c.KAI.Get(ctx, key, kpg, opts...); err != nil {
		return err
	}
	return convertJSON(kpg, pg, key.String())
}

// List implements client.Reader.
func (c PodGroupClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	pgs, ok := list.(*v2alpha2.PodGroupList)
	if !ok {
		return c.KAI.List(ctx, list, opts...)
	}
	kpgs := &kaiv2alpha2.PodGroupList{}
	if err := c.KAI.List(ctx, kpgs, opts...); err != nil {
		return err
	}
	return convertJSON(kpgs, pgs, "PodGroup list")
}

// convertJSON sets out (reset first) to in through their JSON; errors name what.
func convertJSON(in, out any, what string) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("PodGroup %s: %w", what, err)
	}
	switch o := out.(type) {
	case *v2alpha2.PodGroup:
		*o = v2alpha2.PodGroup{}
	case *v2alpha2.PodGroupList:
		*o = v2alpha2.PodGroupList{}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("PodGroup %s: %w", what, err)
	}
	return nil
}
