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
	// DoorbellEnv names the variable that turns the cancel doorbell off: 0 (or false,
	// no, off) and the client never asks for it. Any other value, or none, leaves it on.
	DoorbellEnv = "INTERRUPT_SIDECAR_DOORBELL"
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

// doorbellWanted is whether hello asks for the cancel doorbell: only for a behaviour
// that is sent the cancel (the daemon grants nothing else one), only over a unix socket,
// and unless opted out by Options.DisableDoorbell or INTERRUPT_SIDECAR_DOORBELL.
//
// The doorbell is a unix socket path on the daemon's host, and only a unix: address says
// the daemon is on this host: over TCP the path could name nothing here, or another
// daemon's socket. (The daemon reads a variable of the same name, where "off" means no
// doorbell socket at all; that value turns the client's off too, which costs nothing.)
func doorbellWanted(disabled bool, address string, behavior Behavior) bool {
	if disabled || !behavior.ReceivesCancel() || !strings.HasPrefix(address, "unix:") {
		return false
	}
	switch strings.ToLower(env(DoorbellEnv)) {
	case "0", "false", "no", "off":
		return false
	}
	return true
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
