"""The browser table: play, watch and replay games in a local web page.

* :mod:`liars_env.play.web.recording`: games as JSON lines, written while playing and
  verified on load by re-simulating them (no web dependencies);
* :mod:`liars_env.play.web.session`: the games a server holds (state, bots, expiry);
* :mod:`liars_env.play.web.server`: the Starlette app and the uvicorn runner
  (``pip install 'liars-dice[web]'``);
* :mod:`liars_env.play.web.replay`: the ``liars-replay`` command.

``liars-play --web`` starts the table; see ``docs/web.md``.
"""
