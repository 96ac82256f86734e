package gang

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// GPU resource names and KAI's GPU-sharing annotations.
const (
	// ResourceGPU is NVIDIA's device plugin resource: whole devices.
	ResourceGPU corev1.ResourceName = "nvidia.com/gpu"
	// MIGResourcePrefix starts the MIG profile resources (nvidia.com/mig-1g.5gb).
	MIGResourcePrefix = "nvidia.com/mig-"
	// AnnotationGPUFraction is KAI's pod annotation asking for a fraction of one device ("0.5").
	AnnotationGPUFraction = "gpu-fraction"
	// AnnotationGPUFractionDevices is KAI's pod annotation for the number of devices a fraction
	// applies to (default 1).
	AnnotationGPUFractionDevices = "gpu-fraction-num-devices"
	// AnnotationGPUMemory is KAI's pod annotation asking for GPU memory in MiB.
	AnnotationGPUMemory = "gpu-memory"
)

// GPUs counts GPU devices in thousandths of a device: 1000 is one whole device, 500 is half a
// device (a KAI gpu-fraction of 0.5). It marshals to JSON as a number of devices (1.5).
type GPUs int64

// MaxGPUs is the largest GPU count gangmap computes: 2^52 thousandths, about 4.5 × 10^12
// devices, far beyond any cluster, exact as a float64 (the metrics) and small enough that a sum
// of 2,048 of them fits in an int64. Products and sums of counts saturate at MaxGPUs (Times,
// Plus) instead of wrapping around to a negative count (issue 28: nvidia.com/gpu: 9e15 on
// several pods gave negative gangmap.io/gpus), and a plan whose count reaches it is an error on
// the workload (Plan.sumGPUs); a pod asking more, or a negative count, is an error of the pod
// template (podGPUs).
const MaxGPUs GPUs = 1 << 52

// WholeGPUs converts a count of whole devices, saturating at MaxGPUs (0 for a negative n).
func WholeGPUs(n int64) GPUs { return GPUs(1000).Times(n) }

// Devices is the count as a float number of devices.
func (g GPUs) Devices() float64 { return float64(g) / 1000 }

// String renders the number of devices ("12", "0.5").
func (g GPUs) String() string { return strconv.FormatFloat(g.Devices(), 'f', -1, 64) }

// MarshalJSON writes the number of devices as a JSON number.
func (g GPUs) MarshalJSON() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalJSON reads a JSON number of devices.
func (g *GPUs) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*g = GPUs(f*1000 + 0.5)
	return nil
}

// Times multiplies a per-pod count by a number of pods with checked arithmetic: at most MaxGPUs
// (a product beyond it saturates there, see Saturated), 0 when either is 0 or negative.
func (g GPUs) Times(pods int64) GPUs {
	if g <= 0 || pods <= 0 {
		return 0
	}
	if g >= MaxGPUs || pods > int64(MaxGPUs/g) {
		return MaxGPUs
	}
	return min(GPUs(int64(g)*pods), MaxGPUs)
}

// Plus adds two counts with checked arithmetic: at most MaxGPUs (a sum beyond it saturates
// there), a negative operand counted as 0.
func (g GPUs) Plus(h GPUs) GPUs {
	g, h = max(g, 0), max(h, 0)
	if g >= MaxGPUs || h >= MaxGPUs-g {
		return MaxGPUs
	}
	return g + h
}

// Saturated reports whether g reached MaxGPUs: a count out of the range gangmap computes.
func (g GPUs) Saturated() bool { return g >= MaxGPUs }

// PodGPUs is what one pod asks of GPUs.
type PodGPUs struct {
	// Devices counts nvidia.com/gpu whole devices plus KAI fractions (gpu-fraction ×
	// gpu-fraction-num-devices), in thousandths.
	Devices GPUs `json:"devices"`
	// MIG counts MIG profile resources by profile name (nvidia.com/mig-1g.5gb: 2).
	MIG map[string]int64 `json:"mig,omitempty"`
	// MemoryMiB is KAI's gpu-memory request, in MiB, for GPU sharing by memory.
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
	// DRAClaims names the pod's resource claims, each with the ResourceClaimTemplate or
	// ResourceClaim it comes from ("gpu (template gpu-claim-template)"): GPUs given through DRA
	// are reported by claim, never as zero devices.
	DRAClaims []string `json:"draClaims,omitempty"`
	// OtherAccelerators are accelerator resources of other vendors (names ending in /gpu or /tpu,
	// such as amd.com/gpu or google.com/tpu) by resource name, reported but not counted in
	// Devices: KAI accounts nvidia.com/gpu.
	OtherAccelerators map[string]string `json:"otherAccelerators,omitempty"`
}

// IsZero reports whether the pod asks nothing of GPUs.
func (p PodGPUs) IsZero() bool {
	return p.Devices == 0 && len(p.MIG) == 0 && p.MemoryMiB == 0 && len(p.DRAClaims) == 0 && len(p.OtherAccelerators) == 0
}

// PodTemplateGPUs computes what a pod made from tpl asks of GPUs. Errors name the annotation
// whose value is not a number.
func PodTemplateGPUs(tpl *corev1.PodTemplateSpec) (PodGPUs, error) {
	if tpl == nil {
		return PodGPUs{}, nil
	}
	return podGPUs(&tpl.Spec, tpl.Annotations)
}

// PodGPUsOf computes what a pod asks of GPUs.
func PodGPUsOf(pod *corev1.Pod) (PodGPUs, error) { return podGPUs(&pod.Spec, pod.Annotations) }

func podGPUs(spec *corev1.PodSpec, annotations map[string]string) (PodGPUs, error) {
	req := EffectivePodRequests(spec)
	out := PodGPUs{}
	for name, q := range req {
		switch {
		case name == ResourceGPU:
			d, err := quantityGPUs(q)
			if err != nil {
				return PodGPUs{}, fmt.Errorf("resource %s: %w", ResourceGPU, err)
			}
			out.Devices = out.Devices.Plus(d)
		case strings.HasPrefix(string(name), MIGResourcePrefix):
			if out.MIG == nil {
				out.MIG = map[string]int64{}
			}
			out.MIG[strings.TrimPrefix(string(name), "nvidia.com/")] = q.Value()
		case strings.HasSuffix(string(name), "/gpu") || strings.HasSuffix(string(name), "/tpu"):
			if out.OtherAccelerators == nil {
				out.OtherAccelerators = map[string]string{}
			}
			out.OtherAccelerators[string(name)] = q.String()
		}
	}
	if v, ok := annotations[AnnotationGPUFraction]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 1 {
			return PodGPUs{}, fmt.Errorf("annotation %s: expected a device fraction in (0, 1], got %q", AnnotationGPUFraction, v)
		}
		n := int64(1)
		if d, ok := annotations[AnnotationGPUFractionDevices]; ok {
			if n, err = strconv.ParseInt(d, 10, 64); err != nil || n < 1 {
				return PodGPUs{}, fmt.Errorf("annotation %s: expected a whole number of devices >= 1, got %q", AnnotationGPUFractionDevices, d)
			}
		}
		frac := GPUs(f*1000 + 0.5).Times(n)
		if frac.Saturated() {
			return PodGPUs{}, fmt.Errorf("annotation %s: %d devices of a fraction %s is more than gangmap counts (%s devices, gang.MaxGPUs)", AnnotationGPUFractionDevices, n, v, MaxGPUs)
		}
		out.Devices = out.Devices.Plus(frac)
	}
	if out.Devices.Saturated() {
		return PodGPUs{}, fmt.Errorf("resource %s: more devices than gangmap counts (%s, gang.MaxGPUs)", ResourceGPU, MaxGPUs)
	}
	if v, ok := annotations[AnnotationGPUMemory]; ok {
		m, err := strconv.ParseInt(v, 10, 64)
		if err != nil || m < 0 {
			return PodGPUs{}, fmt.Errorf("annotation %s: expected MiB as a whole number, got %q", AnnotationGPUMemory, v)
		}
		out.MemoryMiB = m
	}
	for _, c := range spec.ResourceClaims {
		name := c.Name
		switch {
		case c.ResourceClaimTemplateName != nil:
			name += " (template " + *c.ResourceClaimTemplateName + ")"
		case c.ResourceClaimName != nil:
			name += " (claim " + *c.ResourceClaimName + ")"
		}
		out.DRAClaims = append(out.DRAClaims, name)
	}
	sort.Strings(out.DRAClaims)
	return out, nil
}

// quantityGPUs converts a pod's nvidia.com/gpu quantity to thousandths of a device. Errors: a
// negative quantity, or one of MaxGPUs or more (compared as a Quantity, before MilliValue could
// overflow).
func quantityGPUs(q resource.Quantity) (GPUs, error) {
	if q.Sign() < 0 {
		return 0, fmt.Errorf("a negative count %s", q.String())
	}
	if q.Cmp(*resource.NewMilliQuantity(int64(MaxGPUs), resource.DecimalSI)) >= 0 {
		return 0, fmt.Errorf("%s devices is more than gangmap counts (%s devices, gang.MaxGPUs)", q.String(), MaxGPUs)
	}
	return GPUs(q.MilliValue()), nil
}

// EffectivePodRequests is the scheduler's view of what a pod requests, per resource:
//
//	max( max over regular init containers i of (init_i + sidecars started before i),
//	     sum of containers + sum of sidecars ) + pod overhead
//
// where sidecars are init containers with restartPolicy Always (KEP-753), each container counts
// its requests, or its limits when it has no request for that resource (never both), and a
// pod-level spec.resources value replaces the container sum for the resources it names.
func EffectivePodRequests(spec *corev1.PodSpec) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range spec.Containers {
		addTo(total, containerRequests(&spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		r := containerRequests(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addTo(sidecars, r)
			// A sidecar's own start also needs the sidecars before it.
			maxInto(initMax, sum(sidecars))
			continue
		}
		maxInto(initMax, sum(r, sidecars))
	}
	addTo(total, sidecars)
	maxInto(total, initMax)
	if spec.Resources != nil {
		for name, q := range pick(spec.Resources.Requests, spec.Resources.Limits) {
			total[name] = q.DeepCopy()
		}
	}
	addTo(total, spec.Overhead)
	return total
}

// containerRequests takes each resource from requests, else from limits.
func containerRequests(c *corev1.Container) corev1.ResourceList {
	return pick(c.Resources.Requests, c.Resources.Limits)
}

func pick(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, q := range limits {
		out[n] = q.DeepCopy()
	}
	for n, q := range requests {
		out[n] = q.DeepCopy()
	}
	return out
}

func sum(lists ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, l := range lists {
		addTo(out, l)
	}
	return out
}

func addTo(into, l corev1.ResourceList) {
	for n, q := range l {
		cur, ok := into[n]
		if !ok {
			into[n] = q.DeepCopy()
			continue
		}
		cur.Add(q)
		into[n] = cur
	}
}

func maxInto(into, l corev1.ResourceList) {
	for n, q := range l {
		if cur, ok := into[n]; !ok || q.Cmp(cur) > 0 {
			into[n] = q.DeepCopy()
		}
	}
}
