# The project's own tests live in tests/; the conformance suite itself is the installed plugin
# (acp_conformance.plugin, loaded through its pytest11 entry point).

import os

import pytest

# a monitor that raises fails the project's tests with its traceback (users get a not-tested finding
# instead, and keep the other monitors' findings); suite runs started by the tests inherit it
os.environ["ACP_CONFORMANCE_MONITOR_ERRORS"] = "raise"


@pytest.hookimpl(tryfirst=True)  # before pytest-timeout reads its settings
def pytest_configure(config):
    # a test that hangs (a target or a fuzz run that never ends) fails after 15 minutes with every thread's
    # stack; pytest-timeout comes with the test extra, and --timeout on the command line still wins
    if config.pluginmanager.hasplugin("timeout") and getattr(config.option, "timeout", None) is None:
        config.option.timeout = 900
