package gang

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func gpus(n string) corev1.ResourceList {
	return corev1.ResourceList{ResourceGPU: resource.MustParse(n)}
}

func TestPodTemplateGPUs(t *testing.T) {
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	cases := map[string]struct {
		tpl  corev1.PodTemplateSpec
		want PodGPUs
	}{
		// Extended resources: requests default to limits; count one of them, never both.
		"limits only": {tpl: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Limits: gpus("8")}}}}},
			want: PodGPUs{Devices: WholeGPUs(8)}},
		"requests and limits count once": {tpl: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: gpus("4"), Limits: gpus("4")}}}}},
			want: PodGPUs{Devices: WholeGPUs(4)}},
		"containers add up": {tpl: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Resources: corev1.ResourceRequirements{Limits: gpus("1")}}, {Resources: corev1.ResourceRequirements{Limits: gpus("2")}}}}},
			want: PodGPUs{Devices: WholeGPUs(3)}},
		// KEP-753: an init container runs before the app containers, so it counts as a max, but a
		// sidecar (restartPolicy Always) keeps running and adds to the app containers and to every
		// init container started after it.
		"init container is a max": {tpl: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{Limits: gpus("4")}}},
			Containers:     []corev1.Container{{Resources: corev1.ResourceRequirements{Limits: gpus("1")}}}}},
			want: PodGPUs{Devices: WholeGPUs(4)}},
		"sidecar adds": {tpl: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{RestartPolicy: always, Resources: corev1.ResourceRequirements{Limits: gpus("1")}},
				{Resources: corev1.ResourceRequirements{Limits: gpus("2")}}},
			Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Limits: gpus("1")}}}}},
			// max(init 2 + sidecar 1 before it, app 1 + sidecar 1) = 3
			want: PodGPUs{Devices: WholeGPUs(3)}},
		"overhead adds": {tpl: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Overhead: gpus("1"),
			Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Limits: gpus("1")}}}}},
			want: PodGPUs{Devices: WholeGPUs(2)}},
		"KAI fraction": {tpl: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationGPUFraction: "0.5"}}},
			want: PodGPUs{Devices: 500}},
		"KAI fraction on two devices and memory": {tpl: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			AnnotationGPUFraction: "0.25", AnnotationGPUFractionDevices: "2", AnnotationGPUMemory: "2048"}}},
			want: PodGPUs{Devices: 500, MemoryMiB: 2048}},
		"MIG per profile": {tpl: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/mig-1g.5gb": resource.MustParse("2")}}}}}},
			want: PodGPUs{MIG: map[string]int64{"mig-1g.5gb": 2}}},
		"DRA claims are named, not zero": {tpl: corev1.PodTemplateSpec{Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu-b", ResourceClaimName: ptr.To("shared")}, {Name: "gpu-a", ResourceClaimTemplateName: ptr.To("one-gpu")}}}},
			want: PodGPUs{DRAClaims: []string{"gpu-a (template one-gpu)", "gpu-b (claim shared)"}}},
		// KAI accounts nvidia.com/gpu; other vendors' accelerators are reported, not counted.
		"other accelerators": {tpl: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"amd.com/gpu": resource.MustParse("1"), "google.com/tpu": resource.MustParse("4")}}}}}},
			want: PodGPUs{OtherAccelerators: map[string]string{"amd.com/gpu": "1", "google.com/tpu": "4"}}},
		"no GPUs": {tpl: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}}}, want: PodGPUs{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := PodTemplateGPUs(&tc.tpl)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestPodTemplateGPUsBadAnnotations(t *testing.T) {
	for _, ann := range []map[string]string{{AnnotationGPUFraction: "half"}, {AnnotationGPUFraction: "1.5"}, {AnnotationGPUFraction: "0.5", AnnotationGPUFractionDevices: "0"}, {AnnotationGPUMemory: "lots"}} {
		_, err := PodTemplateGPUs(&corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: ann}})
		assert.Error(t, err, "%v", ann)
	}
}

func TestPodLevelResourcesReplaceContainerSum(t *testing.T) {
	spec := &corev1.PodSpec{
		Resources:  &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
		Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, Limits: gpus("2")}}},
	}
	got := EffectivePodRequests(spec)
	assert.Equal(t, "4", ptr.To(got[corev1.ResourceCPU]).String())
	assert.Equal(t, "2", ptr.To(got[ResourceGPU]).String())
}

func TestGPUsJSON(t *testing.T) {
	assert.Equal(t, "12", WholeGPUs(12).String())
	assert.Equal(t, "0.5", GPUs(500).String())
	var g GPUs
	require.NoError(t, g.UnmarshalJSON([]byte("1.5")))
	assert.Equal(t, GPUs(1500), g)
}

func TestNames(t *testing.T) {
	uid := "4a33a70e-8d4a-4edd-9083-8e5011a134f0"
	assert.Equal(t, "pg-"+uid+"-jobset", PodGroupName(uid, "jobset", ""))
	long := PodGroupName(uid, "a-very-long-gang-name-for-a-workload", "17")
	assert.LessOrEqual(t, len(long), 63)
	assert.Equal(t, long, PodGroupName(uid, "a-very-long-gang-name-for-a-workload", "17"), "deterministic")
	assert.NotEqual(t, long, PodGroupName(uid, "a-very-long-gang-name-for-a-workload", "18"), "distinct after cutting")
	assert.Equal(t, "decode-worker", SanitizeLabel("Decode_Worker"))
	assert.Regexp(t, `^x[0-9a-f]{8}$`, SanitizeLabel("___"))
}

// TestGPUArithmeticSaturates: products and sums of GPU counts stop at MaxGPUs instead of
// wrapping around to a negative count (issue 28), and Saturated says a count reached it.
func TestGPUArithmeticSaturates(t *testing.T) {
	const maxInt64 = int64(^uint64(0) >> 1)
	tests := []struct {
		name string
		got  GPUs
		want GPUs
	}{
		{"8 devices times 4 pods", WholeGPUs(8).Times(4), WholeGPUs(32)},
		{"zero pods", WholeGPUs(8).Times(0), 0},
		{"negative pods", WholeGPUs(8).Times(-3), 0},
		{"a product past int64", GPUs(1 << 40).Times(1 << 40), MaxGPUs},
		{"a fraction times MaxInt64 devices", GPUs(500).Times(maxInt64), MaxGPUs},
		{"a product just past MaxGPUs", GPUs(MaxGPUs / 2).Times(3), MaxGPUs},
		{"a product just under MaxGPUs", GPUs(MaxGPUs/4 - 1).Times(4), MaxGPUs - 4},
		{"a sum past int64", (MaxGPUs - 1).Plus(MaxGPUs - 1), MaxGPUs},
		{"a sum under MaxGPUs", WholeGPUs(3).Plus(500), 3500},
		{"a negative operand counts 0", GPUs(-5).Plus(700), 700},
		{"whole devices past int64", WholeGPUs(maxInt64), MaxGPUs},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.got, tt.name)
		assert.GreaterOrEqual(t, tt.got, GPUs(0), tt.name)
	}
	assert.True(t, MaxGPUs.Saturated())
	assert.False(t, (MaxGPUs - 1).Saturated())
}

// TestPodGPUsOutOfRange: a pod whose GPU requests would overflow (nvidia.com/gpu 9e15 on two
// containers, a KAI fraction on 2^63-1 devices) or are negative (a CRD's pod template is not
// validated as a Pod) is an error naming the resource or the annotation, never a negative or
// wrapped-around count.
func TestPodGPUsOutOfRange(t *testing.T) {
	ctr := func(n string) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Limits: gpus(n)}}
	}
	tests := map[string]struct {
		tpl  corev1.PodTemplateSpec
		want string
	}{
		"9e15 twice": {corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr("9e15"), ctr("9e15")}}},
			"resource nvidia.com/gpu: 18e15 devices is more than gangmap counts"},
		"negative": {corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr("-4")}}},
			"resource nvidia.com/gpu: a negative count -4"},
		"fraction on 2^63-1 devices": {corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			AnnotationGPUFraction: "0.5", AnnotationGPUFractionDevices: "9223372036854775807"}}},
			"annotation gpu-fraction-num-devices: 9223372036854775807 devices of a fraction 0.5 is more than gangmap counts"},
		"a fraction beside the most devices": {corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationGPUFraction: "0.5"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{ctr("4503599627370")}}},
			"resource nvidia.com/gpu: more devices than gangmap counts"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := PodTemplateGPUs(&tt.tpl)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Zero(t, got.Devices)
		})
	}
}
