//go:build !crashtest

package disk

// defaultHost is the live machine. A build with the crashtest tag wraps it
// in crash points (crashpoint.go); this one has none.
func defaultHost(r Runner) Host { return &LiveHost{Runner: r} }
