"""The browser table: play, watch and replay games in a local web page.

* recordings (games as JSON lines) live in :mod:`liars_env.play.recording`, since every
  tool records games, not only the web table (the old path
  ``liars_env.play.web.recording`` still imports, with a ``DeprecationWarning``);
* :mod:`liars_env.play.web.session`: the games a server holds (state, bots, expiry);
* :mod:`liars_env.play.web.server`: the Starlette app and the uvicorn runner
  (``pip install 'liars-dice[web]'``);
* :mod:`liars_env.play.web.replay`: the ``liars-replay`` command.

``liars-play --web`` starts the table; see ``docs/web.md``.
"""
