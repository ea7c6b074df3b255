"""The README's commands and programs, run as a reader would run them."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from tests.conftest import DaemonProcess
from tests.docs.blocks import ROOT, docblock, run_transcript, transcript
from tests.docs.support import helm_install_as_template, shape, shell_env

REQUIRE_ALL_LANGUAGES = os.environ.get("INTERRUPT_SIDECAR_REQUIRE_ALL_LANGUAGES") == "1"
#: make's echo of the `install` recipe, printed when .venv is older than a package definition.
_MAKE_INSTALL_ECHO = re.compile(r"^(python3? -m venv|\.venv/bin/python -m pip|touch \.venv/)")


def test_quickstart_demo_prints_what_the_readme_shows() -> None:
    env = {k: v for k, v in shell_env().items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    result = subprocess.run(
        ["bash", "-c", docblock("quickstart-demo").text],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    actual = [line for line in result.stdout.splitlines() if not _MAKE_INSTALL_ECHO.match(line)]
    expected = docblock("quickstart-demo-output").text.splitlines()
    assert [shape(line) for line in actual] == [shape(line) for line in expected], result.stdout


def _write_examples(directory: Path) -> None:
    for block in (docblock("example-tool-py"), docblock("example-agent-py")):
        filename = re.match(r"# (\S+\.py):", block.text)
        assert filename is not None, f"{block.where} starts with `# FILE.py: ...`"
        (directory / filename[1]).write_text(block.text)


def test_python_agent_and_tool_print_what_the_readme_shows(daemon: DaemonProcess, tmp_path: Path) -> None:
    _write_examples(tmp_path)
    run_transcript(docblock("example-run-py").text, cwd=tmp_path, env=shell_env(daemon.address), normalize=shape)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_go_tool_prints_the_same_lines_under_the_python_agent(daemon: DaemonProcess, tmp_path: Path) -> None:
    if shutil.which("go") is None:
        message = "the go command is not installed: the README's Go example cannot be built"
        if REQUIRE_ALL_LANGUAGES:
            pytest.fail(message)
        pytest.skip(message)
    _write_examples(tmp_path)
    (tmp_path / "counter.go").write_text(docblock("example-tool-go").text)
    client = ROOT / "clients" / "go"
    module = re.search(r"^module (\S+)", (client / "go.mod").read_text(), flags=re.M)
    assert module is not None
    (tmp_path / "go.mod").write_text(
        f"module example.com/counter\n\ngo 1.26.0\n\nrequire {module[1]} v0.0.0\n\nreplace {module[1]} => {client}\n"
    )
    shutil.copy(client / "go.sum", tmp_path / "go.sum")
    build = subprocess.run(
        ["go", "build", "-o", "counter", "."],
        cwd=tmp_path,
        env={**os.environ, "GOFLAGS": "-mod=mod"},
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    # "python agent.py ./counter prints the same two lines" as `python agent.py python tool.py`.
    [python_run] = transcript(docblock("example-run-py").text)
    session = "$ python agent.py ./counter\n" + "\n".join(python_run.output) + "\n"
    run_transcript(session, cwd=tmp_path, env=shell_env(daemon.address), normalize=shape)


def test_helm_install_line_renders_with_the_repository_chart() -> None:
    rendered = helm_install_as_template("install-helm")
    assert "kind: Deployment" in rendered
    assert 'image: "REGISTRY/interrupt-sidecar:' in rendered, "the --set from the README reaches the pod"


def _checkout_copy(destination: Path) -> None:
    """The files of this checkout (tracked, or new and not ignored), as a fresh clone has them."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file() or source.is_symlink():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_readme_pip_install_works_in_a_clean_venv_and_serves() -> None:
    with tempfile.TemporaryDirectory(prefix="isd-pip-", dir="/tmp") as scratch:
        checkout, venv = Path(scratch) / "checkout", Path(scratch) / "venv"
        _checkout_copy(checkout)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        bin_dir = venv / "bin"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("INTERRUPT_SIDECAR_", "PYTHON"))}
        env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(venv))
        # Exactly the README's install block, in the checkout, with the venv activated.
        install = subprocess.run(
            ["bash", "-ec", docblock("install-pip").text],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=480,
            check=False,
        )
        assert install.returncode == 0, install.stdout + install.stderr
        assert re.match(r"interrupt-sidecar \d+\.\d+\.\d+", install.stdout.splitlines()[-1]), install.stdout
        # The packages come from the venv, not from the source tree.
        where = subprocess.run(
            [str(bin_dir / "python"), "-c", "import interrupt_sidecar, interrupt_sidecar_client as c; "
             "print(interrupt_sidecar.__file__); print(c.__file__)"],
            cwd=scratch, env=env, capture_output=True, text=True, timeout=60, check=True,
        ).stdout.split()  # fmt: skip
        assert all(path.startswith(str(venv)) for path in where), where
        help_text = subprocess.run(
            [str(bin_dir / "interrupt-sidecar"), "--help"], env=env, capture_output=True, text=True, timeout=60
        )
        assert help_text.returncode == 0 and "serve" in help_text.stdout
        _serve_and_ask_status(bin_dir, Path(scratch), env)


def _serve_and_ask_status(bin_dir: Path, scratch: Path, env: dict[str, str]) -> None:
    address = f"unix://{scratch}/sidecar.sock"
    serve = subprocess.Popen(
        [str(bin_dir / "interrupt-sidecar"), "serve", "--listen", address, "--metrics-listen", ""],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(serve.stdout.readline() if serve.stdout else ""))
        reader.start()
        reader.join(30)
        assert ready and ready[0].split() == ["ready", address], ready
        status = subprocess.run(
            [str(bin_dir / "interrupt-sidecar"), "begin", "--address", address, "--context", "pip"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert status.returncode == 0, status.stderr
        listed = subprocess.run(
            [str(bin_dir / "interrupt-sidecar"), "status", "--address", address],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert listed.returncode == 0 and "context=pip" in listed.stdout, listed.stdout + listed.stderr
    finally:
        serve.send_signal(signal.SIGTERM)
        code = serve.wait(30)
        for pipe in (serve.stdout, serve.stderr):
            if pipe is not None:
                pipe.close()
    assert code == 0
