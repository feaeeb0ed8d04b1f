"""What each ``flower`` command does, behind its command line (``cli/commands/``): one module per command
(``go.py`` holds ``run_go``, ``sessions.py`` ``list_sessions`` …) and the pieces they share.

These modules import the Runtime, the SDK and the sibling libraries at their top: a command imports its action
only when it runs, so ``flower --help`` never pays for them (tests/cli/test_startup_imports.py).

The shared pieces, in the order a run meets them:

- ``output.py``: the human view on stderr, the event sink, results on stdout;
- ``credentials.py``, ``reach.py``, ``secret_input.py``: the credential gates and the endpoint's first look;
- ``stdin_prompt.py``, ``session_ids.py``: a prompt from stdin, a session id from a prefix;
- ``handoff.py``: ``--window`` / ``--no-handoff`` as a policy;
- ``store.py``: the session store of ``--store`` (or ``<run dir>/sessions.db``), its trouble in one line;
- ``opening.py``: the command's Runtime, its run dir and store checked first;
- ``rescue.py``: signals and failures while the run goes on (nothing vanishes from the manifest);
- ``closing.py``, ``exit_codes.py``: the answer, the closing line, and the exit code.
"""
