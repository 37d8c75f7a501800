// Package crashtest holds the crash-safety and concurrency tests of
// `diskprep prepare`, run against the real binary on loop devices: it is
// killed with SIGKILL at every step (through disk.CrashEnv, a test-only
// switch), and two runs of one disk are started together. The package has
// no code of its own; see its tests.
package crashtest
