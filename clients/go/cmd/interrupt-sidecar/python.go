package main

import (
	"fmt"
	"os"
)

// delegateToPython hands every other subcommand to the Python implementation
// (placeholder until it lands).
func delegateToPython(args []string) int {
	fmt.Fprintln(os.Stderr, "interrupt-sidecar (native): only run, begin, interrupt, end and status are native")
	return 2
}
