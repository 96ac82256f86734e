//go:build !race

package expr

// raceDetector: false without -race, when allocation counts are the program's own.
const raceDetector = false
