package interruptsidecar

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The environment an agent hands to its tools.
const (
	// AddressEnv names the variable holding the daemon's address:
	// unix:///abs/path.sock or HOST:PORT.
	AddressEnv = "INTERRUPT_SIDECAR_ADDRESS"
	// TokenEnv names the variable holding the execution's attach token.
	TokenEnv = "INTERRUPT_SIDECAR_TOKEN"
)

func env(name string) string {
	return strings.TrimSpace(os.Getenv(name))
}

// DefaultAddress is where `interrupt-sidecar serve` listens without --listen:
// $XDG_RUNTIME_DIR/interrupt-sidecar/sidecar.sock, else
// /tmp/interrupt-sidecar-$UID/sidecar.sock.
func DefaultAddress() string {
	if dir := env("XDG_RUNTIME_DIR"); dir != "" {
		return "unix://" + filepath.Join(dir, "interrupt-sidecar", "sidecar.sock")
	}
	return fmt.Sprintf("unix:///tmp/interrupt-sidecar-%d/sidecar.sock", os.Getuid())
}

// ResolveAddress is the daemon's address: address when set, else
// INTERRUPT_SIDECAR_ADDRESS, else [DefaultAddress].
func ResolveAddress(address string) string {
	if address != "" {
		return address
	}
	if fromEnv := env(AddressEnv); fromEnv != "" {
		return fromEnv
	}
	return DefaultAddress()
}

// grpcTarget turns a sidecar address into a grpc-go target: unix:// addresses are
// understood as they are; HOST:PORT goes through the passthrough resolver, as the
// other clients dial it (no DNS lookup for a loopback address).
func grpcTarget(address string) string {
	if strings.Contains(address, "://") || strings.HasPrefix(address, "unix:") {
		return address
	}
	return "passthrough:///" + address
}
