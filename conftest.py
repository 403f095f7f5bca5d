# The project's own tests live in tests/; the conformance suite itself is the installed plugin
# (acp_conformance.plugin, loaded through its pytest11 entry point).

import pytest


@pytest.hookimpl(tryfirst=True)  # before pytest-timeout reads its settings
def pytest_configure(config):
    # a test that hangs (a target or a fuzz run that never ends) fails after 15 minutes with every thread's
    # stack; pytest-timeout comes with the test extra, and --timeout on the command line still wins
    if config.pluginmanager.hasplugin("timeout") and getattr(config.option, "timeout", None) is None:
        config.option.timeout = 900
