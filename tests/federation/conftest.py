"""The daemon suite's fixtures (a real daemon, a channel and a coordinator stub) serve here too."""

from tests.daemon.conftest import channel, stub, tmp_short

__all__ = ["channel", "stub", "tmp_short"]
