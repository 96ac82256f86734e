package podview

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

func sharePod(name string, labels map[string]string, controller bool) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: k8stypes.UID(fmt.Sprintf("6f1d3c2a-0b4e-4c8d-9a7f-%012x", name[0])), Labels: labels,
		Annotations:     map[string]string{"pod-group-name": "pg-1"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "CustomJob", Name: "w", UID: "w-uid", Controller: &controller}}}}
}

// Equal label, annotation and owner-reference lists share one slice; different ones (a value, or
// only the controller flag, differs) do not; a pod read from a Record changes no other Record.
func TestRecordsShareEqualSlices(t *testing.T) {
	a := ToRecord(sharePod("a", map[string]string{"role": "worker", "x": "1"}, true))
	b := ToRecord(sharePod("b", map[string]string{"x": "1", "role": "worker"}, true))
	c := ToRecord(sharePod("c", map[string]string{"role": "worker", "x": "2"}, false))
	require.Equal(t, a.Labels, b.Labels)
	assert.Same(t, &a.Labels[0], &b.Labels[0], "equal labels: one slice")
	assert.Same(t, &a.Annotations[0], &c.Annotations[0], "equal annotations: one slice")
	assert.Same(t, &a.OwnerReferences()[0], &b.OwnerReferences()[0], "equal owner references: one slice")
	assert.Same(t, a.owner, b.owner, "equal generateName, priority class and owner references: one struct")
	assert.NotSame(t, &a.Labels[0], &c.Labels[0])
	assert.NotSame(t, &a.OwnerReferences()[0], &c.OwnerReferences()[0], "the controller flag differs")
	assert.False(t, *c.OwnerReferences()[0].Controller)

	p := b.Pod("kai-scheduler")
	p.Labels["role"] = "changed"
	*p.OwnerReferences[0].Controller = false
	assert.Equal(t, map[string]string{"role": "worker", "x": "1"}, a.Pod("kai-scheduler").Labels)
	assert.True(t, *a.OwnerReferences()[0].Controller)
}

// The sharing key tells apart lists whose joined text is the same.
func TestRecordShareKeyIsUnambiguous(t *testing.T) {
	x := shared.pairsOf([]string{"a:b", "c"})
	y := shared.pairsOf([]string{"a", "b:c"})
	assert.Equal(t, []string{"a:b", "c"}, x)
	assert.Equal(t, []string{"a", "b:c"}, y)
	z := shared.pairsOf([]string{"1:a", ""})
	w := shared.pairsOf([]string{"", "1:a"})
	assert.Equal(t, []string{"1:a", ""}, z)
	assert.Equal(t, []string{"", "1:a"}, w)
}
