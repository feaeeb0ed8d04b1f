"""The ``flower`` commands' command lines: one module per command, holding its typer function — the
arguments and options, the help (its docstring), the example under ``--help``.

Each adds itself to the app (``_root_app.app``) as it is imported; ``_app.py`` imports them in the order
``flower --help`` lists them. A command's options shared with others come from ``_options.py``; the global
options arrive as ``ctx.obj`` (``_global_options.py``). What the command does is in ``cli/actions/``,
imported inside the function: these modules load only typer, so ``flower --help`` stays fast.
"""
