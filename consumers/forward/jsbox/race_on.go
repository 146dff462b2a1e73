//go:build race

package jsbox

// raceFactor multiplies a worker's memory limit in a binary built with the
// race detector, whose shadow memory counts towards RLIMIT_DATA.
const raceFactor = 4
