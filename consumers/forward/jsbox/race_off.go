//go:build !race

package jsbox

// raceFactor multiplies a worker's memory limit in a binary built with the
// race detector (race_on.go); 1 otherwise.
const raceFactor = 1
