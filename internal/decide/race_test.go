//go:build race

package decide

// raceDetector: the race detector multiplies memory, so TestFlood does not
// hold RSS to its bound under it.
const raceDetector = true
