//go:build !race

package decide

const raceDetector = false
