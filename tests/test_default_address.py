"""The daemon and the Python client find the default socket by the same rule."""

from __future__ import annotations

import os

import pytest
from interrupt_sidecar.config import default_socket_path, serve_config
from interrupt_sidecar_client._config import default_address


@pytest.mark.parametrize("runtime_dir", [None, "/run/user/1000"])
def test_client_default_is_the_daemon_default(monkeypatch: pytest.MonkeyPatch, runtime_dir: str | None) -> None:
    if runtime_dir is None:
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    else:
        monkeypatch.setenv("XDG_RUNTIME_DIR", runtime_dir)
    assert default_address() == f"unix://{default_socket_path(os.environ)}"


@pytest.mark.parametrize(
    ("runtime_dir", "expected"),
    [
        ("/run/user/7", "/run/user/7/interrupt-sidecar/sidecar.sock"),
        (None, f"/tmp/interrupt-sidecar-{os.getuid()}/sidecar.sock"),
        ("", f"/tmp/interrupt-sidecar-{os.getuid()}/sidecar.sock"),
        ("  ", f"/tmp/interrupt-sidecar-{os.getuid()}/sidecar.sock"),
    ],
)
def test_the_one_rule(runtime_dir: str | None, expected: str) -> None:
    """The daemon imports the client's rule: pin what it says, for every caller at once."""
    env = {} if runtime_dir is None else {"XDG_RUNTIME_DIR": runtime_dir}
    assert str(default_socket_path(env)) == expected
    assert serve_config({}, env).listen[0].grpc_target() == default_address(env) == f"unix://{expected}"
