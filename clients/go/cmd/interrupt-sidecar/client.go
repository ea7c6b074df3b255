package main

import (
	"fmt"
	"os"
)

// clientCommand implements begin, interrupt, end and status (placeholder until they land).
func clientCommand(name string, args []string) int {
	fmt.Fprintf(os.Stderr, "interrupt-sidecar (native): %s is not implemented yet\n", name)
	return 1
}
