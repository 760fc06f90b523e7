"""Settings from YAML files and ``key=value`` command-line items, checked before work.

One loader serves every settings dataclass (our PPO's ``Args``, RLlib's ``RLlibArgs``):
each key must be a field, each value of the field's type, and the dataclass's own
``validate()`` (ranges, names) runs before any work starts.

Example:
    >>> parse_key_values(["total_steps=1000", "league=[bayes, belief]", "run_name="])
    {'total_steps': 1000, 'league': ['bayes', 'belief'], 'run_name': None}
"""

from __future__ import annotations

import dataclasses
import functools
import json
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# YAML 1.1 (PyYAML) reads ``3e-4`` and ``1E5`` as strings: its floats need a dot. Settings
# files are written the way Python and YAML 1.2 write numbers, so a mantissa without a
# dot and a signed exponent is a float too (``3e-4``, ``-1e-4``, ``2E+3``).
_FLOAT_WITHOUT_DOT = r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$"


@functools.cache
def _settings_loader() -> type:
    """A safe YAML loader that also reads ``3e-4`` as a float (see ``_FLOAT_WITHOUT_DOT``)."""
    import re

    import yaml

    class SettingsLoader(yaml.SafeLoader):
        pass

    SettingsLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float", re.compile(_FLOAT_WITHOUT_DOT), list("-+0123456789")
    )
    return SettingsLoader


def load_yaml(text: str) -> Any:
    """``text`` parsed as YAML with the safe loader, ``3e-4`` included as a float.

    Example:
        >>> load_yaml("learning_rate: 3e-4")
        {'learning_rate': 0.0003}
    """
    import yaml

    return yaml.load(text, Loader=_settings_loader())  # noqa: S506 - a SafeLoader subclass


def parse_key_values(items: Iterable[str], what: str = "--set") -> dict[str, Any]:
    """``key=value`` items, each value parsed as YAML (numbers, booleans, lists, ...).

    Raises:
        ValueError: for an item without ``=``, naming ``what`` it was given as.
    """
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"{what} {item!r} must look like key=value")
        try:
            out[key.strip()] = load_yaml(raw)
        except yaml.YAMLError as exc:
            raise ValueError(f"{what} {item!r}: the value is not valid YAML ({exc})") from None
    return out


def parse_rule_overrides(items: Iterable[str], what: str = "--rule") -> dict[str, Any]:
    """``KEY=VALUE`` rule options from a command line (values parsed as YAML).

    The table size is not one of them: the commands take it from ``--players``.

    Raises:
        ValueError: for an item without ``=``, or one that sets ``num_players``.

    Example:
        >>> parse_rule_overrides(["dice_per_player=1", "palifico=true"])
        {'dice_per_player': 1, 'palifico': True}
    """
    overrides = parse_key_values(items, what=what)
    refuse_table_size(overrides, what, "--players")
    return overrides


def refuse_table_size(overrides: Mapping[str, Any], what: str, instead: str) -> None:
    """``ValueError`` if the rule options ``overrides`` set ``num_players``.

    Every command and config takes the table size from its own setting (``instead``);
    a second place to set it would be silently overridden or clash.
    """
    if "num_players" in overrides:
        raise ValueError(
            f"{what} num_players={overrides['num_players']!r}: the table size is set by "
            f"{instead}, not by a rule option"
        )


def require_positive(args: Any, names: tuple[str, ...]) -> None:
    """Raises ``ValueError`` for the first of the fields ``names`` of ``args`` below 1."""
    for name in names:
        if getattr(args, name) < 1:
            raise ValueError(f"{name} must be at least 1, got {getattr(args, name)}")


def require_non_negative(args: Any, names: tuple[str, ...]) -> None:
    """Raises ``ValueError`` for the first of the fields ``names`` of ``args`` below 0."""
    for name in names:
        if getattr(args, name) < 0:
            raise ValueError(f"{name} must be >= 0, got {getattr(args, name)!r}")


def load_settings(cls: type[T], config: str | None = None, sets: Iterable[str] = ()) -> T:
    """Builds the settings dataclass ``cls`` from a YAML file and ``key=value`` overrides.

    Args:
        cls: A dataclass whose fields are the settings (it may define ``validate()``).
        config: Path of a YAML mapping of settings (None: defaults only).
        sets: ``key=value`` overrides, applied after the file.

    Raises:
        ValueError: naming the file, key or value: a missing or malformed file, an
            unknown key, a value of the wrong type, or what ``validate()`` rejects.
    """
    values = {} if config is None else _read_settings_file(Path(config))
    values.update(parse_key_values(sets))
    return make_settings(cls, values, source=config or "--set")


def load_run_settings(
    cls: type[T], run: str, sets: Iterable[str] = (), runs_dir: str = "runs"
) -> T:
    """The settings a run was started with (its ``config.json``), with overrides.

    ``run`` is the run's folder or its name under ``runs_dir``. The run continues in
    the folder its ``config.json`` was found in, wherever the run was started from
    (``runs_dir`` and ``run_name`` are set to it, if the settings have them).
    """
    folder = Path(run) if Path(run).is_dir() else Path(runs_dir) / run
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise ValueError(f"--resume {run}: no run found (looked for {config_file})")
    saved = _read_settings_file(config_file)
    saved.update(parse_key_values(sets))
    known = {f.name for f in dataclasses.fields(cls)}
    if {"runs_dir", "run_name"} <= known:
        saved.update(runs_dir=str(folder.parent), run_name=folder.name)
    return make_settings(cls, saved, source=str(config_file))


def _read_settings_file(path: Path) -> dict[str, Any]:
    """The mapping of settings in a YAML file, or a JSON one (``.json``: a run's config).

    Raises:
        ValueError: naming the file: missing, unparsable, or not a mapping.
    """
    import yaml

    if not path.is_file():
        raise ValueError(f"config file {path} does not exist")
    kind, parse, error = (
        ("JSON", json.loads, json.JSONDecodeError)
        if path.suffix == ".json"
        else ("YAML", load_yaml, yaml.YAMLError)
    )
    try:
        loaded = parse(path.read_text())
    except error as exc:
        raise ValueError(f"config file {path} is not valid {kind}: {exc}") from None
    if loaded is None:  # an empty YAML file
        loaded = {}
    if not isinstance(loaded, dict):
        raise ValueError(f"config file {path} must hold a mapping of settings")
    return loaded


def make_settings(cls: type[T], values: dict[str, Any], source: str = "settings") -> T:
    """Checks ``values`` against the fields of the dataclass ``cls`` and builds it.

    A class may list retired keys in ``RETIRED_SETTINGS`` (key → what replaced it);
    they raise with that advice. Integers are accepted for float fields; booleans are
    not numbers here.

    Example:
        >>> @dataclasses.dataclass
        ... class Demo:
        ...     steps: int = 1
        >>> make_settings(Demo, {"steps": 5})
        Demo(steps=5)
        >>> make_settings(Demo, {"steps": "5"}, source="demo.yaml")
        Traceback (most recent call last):
        ...
        ValueError: demo.yaml: steps must be int, got '5' (str)
    """
    values = dict(values)
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    retired = getattr(cls, "RETIRED_SETTINGS", {})
    for key, value in list(values.items()):
        if key in retired:
            raise ValueError(f"{source}: {key} was retired: {retired[key]}")
        if key not in known:
            raise ValueError(
                f"{source}: unknown setting {key!r}; expected one of {', '.join(sorted(known))}"
            )
        expected = hints[key]
        if expected is str and value is None:  # "--set key=" (an empty YAML value)
            values[key] = value = ""
        ok = isinstance(value, expected) and not (
            expected in (int, float) and isinstance(value, bool)
        )
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            values[key] = float(value)
            ok = True
        if not ok:
            raise ValueError(
                f"{source}: {key} must be {expected.__name__}, "
                f"got {value!r} ({type(value).__name__})"
            )
    settings = cls(**values)
    validate = getattr(settings, "validate", None)
    if callable(validate):
        validate()
    return settings
