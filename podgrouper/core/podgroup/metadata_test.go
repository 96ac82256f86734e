package podgroup

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFindSubGroupForPod(t *testing.T) {
	md := &Metadata{
		Namespace: "ns",
		SubGroups: []*SubGroupMetadata{
			{Name: "coordinator", PodsReferences: []string{"c-0"}},
			nil,
			{Name: "worker", PodsReferences: []string{"w-0", "shared"}},
			{Name: "other", PodsReferences: []string{"shared"}},
		},
	}
	tests := map[string]struct {
		namespace, name string
		want            string // subgroup name, "" for nil
	}{
		"first subgroup":                 {namespace: "ns", name: "c-0", want: "coordinator"},
		"later subgroup":                 {namespace: "ns", name: "w-0", want: "worker"},
		"first match wins":               {namespace: "ns", name: "shared", want: "worker"},
		"no subgroup":                    {namespace: "ns", name: "nobody"},
		"pod in another namespace":       {namespace: "other", name: "c-0"},
		"same name in another namespace": {namespace: "", name: "w-0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := md.FindSubGroupForPod(tc.namespace, tc.name)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			if assert.NotNil(t, got) {
				assert.Equal(t, tc.want, got.Name)
			}
		})
	}
}
