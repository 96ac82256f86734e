//go:build race

package expr

// raceDetector: the race detector's runtime allocates beside the program (shadow memory,
// sync bookkeeping), so allocation counts measured under -race are not the program's own
// (FuzzEvaluationAllocatesWithinItsBudget's seed run: 16 MB for what allocates under 4.6 MB
// without it); the fuzz runs of make fuzz-smoke, without -race, assert the bound.
const raceDetector = true
