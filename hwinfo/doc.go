// Package hwinfo reads the hardware and software identity of a Linux host:
// CPU, memory, board, BIOS, OS, kernel, virtualization, and every disk with
// its partitions, filesystems, mounts and holders. It is read-only. Every
// path it reads hangs off one root directory, so a fixture tree under
// testdata stands in for a real machine.
package hwinfo
