package webhook

import (
	"bytes"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
)

// TestDecideSharedLeavesTheCachedOwnerAlone: the webhook decides with the top owner as the cache
// holds it (decide.Decider.DecideShared, no deep copy), so nothing on its path may write to
// it. Admissions run concurrently from a cold plan cache (one goroutine builds the plan,
// evaluating the definition's expressions on the shared JobSet, while others read it for KAI's
// default metadata); under -race any write to the shared object is reported, and afterwards the
// object must equal a copy taken before.
func TestDecideSharedLeavesTheCachedOwnerAlone(t *testing.T) {
	ctx := admissionContext()
	f := newAdmissionFixture(t)
	before := f.jobSet.DeepCopy()
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			for i := 0; i < 20; i++ {
				resp, err := f.admit(ctx, request(f.podJSON), &out)
				if err != nil || len(resp.Patch) == 0 {
					errs <- "admission not grouped: " + answer(resp).Message
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if !equality.Semantic.DeepEqual(before, f.jobSet) {
		t.Errorf("the shared JobSet changed during admissions:\nbefore %v\nafter  %v", before.Object, f.jobSet.Object)
	}
}
