# The project's own tests live in tests/; the conformance suite itself is the installed plugin
# (acp_conformance.plugin, loaded through its pytest11 entry point).
