// Command diskprep prepares, benchmarks and compares the data disks of a Linux host.
package main

import (
	// The required dependencies, pinned in go.mod before the packages that use them land.
	_ "github.com/diskfs/go-diskfs"
	_ "github.com/jaypipes/ghw"
	_ "github.com/urfave/cli/v2"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/sys/unix"
)

func main() {}
