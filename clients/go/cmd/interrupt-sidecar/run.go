package main

import (
	"fmt"
	"os"
)

// runCommand implements `interrupt-sidecar run` (placeholder until the native run lands).
func runCommand(args []string) int {
	fmt.Fprintln(os.Stderr, "interrupt-sidecar (native): run is not implemented yet")
	return 1
}
