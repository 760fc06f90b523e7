"""Pipelines: one file, one command, that rebuilds a model made in stages.

A pipeline file names its stages in the order they run; each is one of:

``train``
    A training run: a mapping of ``liars-train`` settings (the fields of
    :class:`liars_train.ppo.Args`), written as in a config file. Its model is a
    checkpoint of the run: ``take: last`` (the default: the newest ``step_N``),
    ``take: best`` or ``take: step_N``.
``average``
    The weighted average of earlier models (``sources`` and ``weights``, as
    ``python -m liars_train.tools.average``).
``exploit``
    A best response trained by ``liars-exploit`` (``target``, ``rules``, ``players``,
    ``steps``, ``seed``, ``init``, ``games``, ``set``); its model is the learner's last
    checkpoint.
``blueprint``
    A last-bid blueprint (:func:`liars_env.solver.last_bid.solve_blueprint`) of a
    2-player rule set: ``rules`` (a preset), ``players`` (2), ``iterations`` (CFR+
    iterations per round), ``memory`` and ``faces`` (what a player remembers of the
    round's bids), ``max_memory`` and ``max_bytes`` (more memory where the round is
    small), ``tolerance`` (the fixed point of rounds that repeat, as with calza),
    ``tremble`` (solve the perturbed game: each node's random action, 0 by default),
    ``light_mass`` (the file's coarse cells) and ``rule`` (a mapping of rule options,
    optional). Its model
    is a folder holding ``blueprint.npz`` (the ``blueprint:FOLDER`` agent); an
    interrupted solve goes on from its last finished round.
``from``
    A stage of another pipeline file (``pipeline``: its path, relative to this file;
    ``stage``: its name), built there (under that pipeline's folder) if it is not yet.

A string anywhere in a stage may name an earlier stage's model as ``${STAGE}`` (a model
folder, e.g. ``init_checkpoint: ${kick}`` or ``"checkpoint:${kick}"`` in a league) or a
run inside a train stage's folder as ``${STAGE/PATH}``: the newest ``step_N`` checkpoint of
``PATH`` there (``${round4/exploiters/0}``: that round's first exploiter).

Example (``configs/models/*.yaml`` hold the shipped models' pipelines)::

    pipeline: demo            # stages run in runs/demo/<stage>/; the result: runs/demo/mix/model
    result: mix
    stages:
      first:
        train: {rules: perudo, num_players: 2, total_steps: 2000000}
      second:
        train: {rules: perudo, num_players: 2, total_steps: 1000000,
                init_checkpoint: "${first}", league: [bayes, "checkpoint:${first}"]}
      mix:
        average: {sources: ["${first}", "${second}"], weights: [0.7, 0.3]}

Running it again resumes: a finished stage is kept (its ``stage.json`` records what
built it; a stage whose definition changed since, or that took a stage built again
since, is refused rather than silently reused), an interrupted training run continues
from its last checkpoint (unless its stage has changed since: refused too), an
interrupted best response starts again. ``liars-train --pipeline FILE`` is the command.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from liars_env.agents.policy import load_policy, write_checkpoint
from liars_train.config import load_yaml, make_settings, parse_key_values
from liars_train.ppo.checkpoints import step_checkpoints

KINDS = ("train", "average", "exploit", "blueprint", "from")
"""The kinds of stage, each a key of the stage's mapping."""
TOP_KEYS = {"pipeline", "result", "stages"}
"""The keys of a pipeline file."""
EXPLOIT_KEYS = {"target", "rules", "players", "steps", "games", "seed", "init", "set"}
"""The settings of an ``exploit`` stage (as ``liars-exploit``'s options)."""
BLUEPRINT_KEYS = {
    "rules",
    "players",
    "iterations",
    "memory",
    "faces",
    "max_memory",
    "max_bytes",
    "tolerance",
    "tremble",
    "light_mass",
    "rule",
}
"""The settings of a ``blueprint`` stage."""
BLUEPRINT_FILE = "blueprint.npz"
"""The file of a ``blueprint`` stage's model folder."""
REFERENCE = re.compile(r"\$\{([A-Za-z0-9_.-]+)((?:/[A-Za-z0-9_.-]+)*)\}")
"""``${STAGE}`` or ``${STAGE/PATH}`` in a string of a stage."""
STAGE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
"""What a stage or pipeline may be called (it names a folder)."""
STAGE_RECORD = "stage.json"
"""The file, in a stage's folder, that says the stage is finished and what built it."""
HOW_SETTINGS = {"device", "torch_threads", "learn_threads", "progress"}
"""Settings that say how a stage runs, not what it builds: left out of its fingerprint."""


@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage of a pipeline.

    Attributes:
        name: Its name: the folder under the pipeline's folder, and how later stages
            refer to its model.
        kind: One of :data:`KINDS`.
        spec: What the kind needs (the mapping under the kind's key), references unresolved.
        take: For ``train``: which checkpoint is the stage's model (``last``, ``best``
            or ``step_N``).
    """

    name: str
    kind: str
    spec: Any
    take: str = "last"


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """A parsed, checked pipeline file.

    Attributes:
        name: Its folder under the runs folder.
        stages: In the order they run.
        result: The stage whose model is the pipeline's result.
        path: The file it was read from (``from`` stages are relative to its folder).
    """

    name: str
    stages: tuple[Stage, ...]
    result: str
    path: Path

    def stage(self, name: str) -> Stage:
        """The stage called ``name``.

        Raises:
            ValueError: naming the stages there are.
        """
        for stage in self.stages:
            if stage.name == name:
                return stage
        known = ", ".join(s.name for s in self.stages)
        raise ValueError(f"pipeline {self.path}: no stage {name!r} (stages: {known})")


# ------------------------------------------------------------------------- reading
def load_pipeline(path: str | Path) -> Pipeline:
    """Reads and checks a pipeline file (everything but training; nothing is written).

    The checks: the file's keys, each stage's kind and settings (a ``train`` stage's
    settings as ``liars-train`` checks a config, with references stood in for), and
    that every reference names an earlier stage and ``result`` a stage; a ``from``
    stage's file is read and checked too.

    Raises:
        ValueError: naming the file, the stage and what is wrong.
    """
    return _load(Path(path), ())


def _load(path: Path, seen: tuple[Path, ...]) -> Pipeline:
    where = f"pipeline {path}"
    if path.resolve() in seen:
        chain = " -> ".join(str(p) for p in (*seen, path.resolve()))
        raise ValueError(f"{where}: pipelines refer to each other in a loop: {chain}")
    if not path.is_file():
        raise ValueError(f"{where}: the file does not exist")
    try:
        data = load_yaml(path.read_text())
    except Exception as exc:  # yaml.YAMLError, without importing yaml here
        raise ValueError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: must hold a mapping with keys {sorted(TOP_KEYS)}")
    unknown = set(data) - TOP_KEYS
    missing = TOP_KEYS - set(data)
    if unknown or missing:
        raise ValueError(
            f"{where}: keys must be {sorted(TOP_KEYS)}; "
            f"unknown {sorted(unknown)}, missing {sorted(missing)}"
        )
    name = data["pipeline"]
    if not isinstance(name, str) or not STAGE_NAME.fullmatch(name):
        raise ValueError(f"{where}: 'pipeline' must be a folder name, got {name!r}")
    if not isinstance(data["stages"], dict) or not data["stages"]:
        raise ValueError(f"{where}: 'stages' must be a non-empty mapping of name to stage")
    stages: list[Stage] = []
    for stage_name, body in data["stages"].items():
        stage = _parse_stage(path, str(stage_name), body, [s.name for s in stages])
        if stage.kind == "from":
            other = _load(_from_path(path, stage.spec), (*seen, path.resolve()))
            other.stage(stage.spec["stage"])  # raises naming the stages there
        stages.append(stage)
    names = [s.name for s in stages]
    if data["result"] not in names:
        raise ValueError(f"{where}: result {data['result']!r} is not a stage ({', '.join(names)})")
    return Pipeline(name, tuple(stages), data["result"], path)


def _parse_stage(path: Path, name: str, body: Any, earlier: list[str]) -> Stage:
    where = f"pipeline {path}, stage {name!r}"
    if not STAGE_NAME.fullmatch(name) or name in ("model",):
        raise ValueError(f"{where}: a stage's name must be a folder name other than 'model'")
    if not isinstance(body, dict):
        raise ValueError(f"{where}: must be a mapping with one of the keys {list(KINDS)}")
    kinds = [k for k in KINDS if k in body]
    if len(kinds) != 1:
        raise ValueError(f"{where}: needs exactly one of {list(KINDS)}, got {sorted(body)}")
    kind = kinds[0]
    extra = set(body) - {kind} - ({"take"} if kind == "train" else set())
    if extra:
        raise ValueError(f"{where}: unknown keys {sorted(extra)} beside {kind!r}")
    spec = body[kind]
    for ref, _ in _references(spec):
        if ref not in earlier:
            raise ValueError(
                f"{where}: ${{{ref}}} names no earlier stage "
                f"(earlier: {', '.join(earlier) or 'none'})"
            )
    stand_in = _resolve(spec, lambda ref, sub: f"/pipeline/{ref}{sub}")
    take = body.get("take", "last")
    if kind == "train":
        _check_train(where, stand_in)
        if not isinstance(take, str) or not re.fullmatch(r"last|best|step_\d+", take):
            raise ValueError(f"{where}: take must be last, best or step_N, got {take!r}")
    elif kind == "average":
        _check_average(where, stand_in)
    elif kind == "exploit":
        _check_exploit(where, stand_in)
    elif kind == "blueprint":
        blueprint_rules(where, stand_in)
    else:
        if not isinstance(spec, dict) or set(spec) != {"pipeline", "stage"}:
            raise ValueError(f"{where}: 'from' needs exactly 'pipeline' (a file) and 'stage'")
    return Stage(name, kind, spec, take)


def _check_train(where: str, settings: Any) -> None:
    from liars_train import ppo

    if not isinstance(settings, dict):
        raise ValueError(f"{where}: 'train' must be a mapping of liars-train settings")
    reserved = {"runs_dir", "run_name"} & set(settings)
    if reserved:
        raise ValueError(f"{where}: {sorted(reserved)} are set by the pipeline, not the stage")
    make_settings(ppo.Args, dict(settings), source=where)


def _check_average(where: str, spec: Any) -> None:
    from liars_train.tools.average import normalized_weights

    if not isinstance(spec, dict) or set(spec) - {"sources", "weights"} or "sources" not in spec:
        raise ValueError(f"{where}: 'average' needs 'sources' (a list) and may have 'weights'")
    sources = spec["sources"]
    if not isinstance(sources, list) or len(sources) < 2:
        raise ValueError(f"{where}: average 'sources' must list two or more models")
    weights = spec.get("weights")
    numbers = isinstance(weights, list) and all(
        isinstance(w, int | float) and not isinstance(w, bool) for w in weights
    )
    if weights is not None and not numbers:
        raise ValueError(f"{where}: average 'weights' must be a list of numbers")
    normalized_weights(weights, len(sources))  # raises on a bad count or sign


def _check_exploit(where: str, spec: Any) -> None:
    if not isinstance(spec, dict):
        raise ValueError(f"{where}: 'exploit' must be a mapping of {sorted(EXPLOIT_KEYS)}")
    unknown = set(spec) - EXPLOIT_KEYS
    if unknown or not {"target", "rules", "players", "steps", "seed"} <= set(spec):
        raise ValueError(
            f"{where}: 'exploit' needs target, rules, players, steps and seed (may have "
            f"games, init, set); unknown {sorted(unknown)}"
        )
    if not isinstance(spec.get("set", []), list):
        raise ValueError(f"{where}: exploit 'set' must be a list of KEY=VALUE strings")
    parse_key_values(spec.get("set", []), what=f"{where}: exploit set")


def blueprint_settings(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A ``blueprint`` stage's solve and file settings, its defaults filled in.

    The keys of :func:`~liars_env.solver.last_bid.solve_blueprint` (``iterations``,
    ``memory``, ``faces``, ``max_memory``, ``max_bytes``, ``tolerance``, ``tremble``) and
    ``light_mass`` (:meth:`~liars_env.solver.last_bid.Blueprint.save`), with the
    defaults of those two; unchecked (:func:`blueprint_rules` checks them).

    Example:
        >>> blueprint_settings({"rules": "perudo", "memory": 2})["memory"]
        2
    """
    from liars_env.solver.last_bid import Blueprint, solve_blueprint

    solve = inspect.signature(solve_blueprint).parameters
    keys = ("iterations", "memory", "faces", "max_memory", "max_bytes", "tolerance", "tremble")
    defaults = {key: solve[key].default for key in keys}
    defaults["light_mass"] = inspect.signature(Blueprint.save).parameters["light_mass"].default
    return {key: spec.get(key, default) for key, default in defaults.items()}


def blueprint_rules(where: str, spec: Any):
    """The rule set of a ``blueprint`` stage's settings, checked.

    Raises:
        ValueError: for unknown or missing keys, bad rules, or rules the blueprint
            cannot solve.
    """
    from liars_env.rules import RuleSet
    from liars_env.solver.blueprint_file import check_light_mass
    from liars_env.solver.graph import check_supported
    from liars_env.solver.last_bid import check_tolerance, check_tremble
    from liars_env.solver.recall_graph import check_max_memory, check_memory

    if not isinstance(spec, dict) or set(spec) - BLUEPRINT_KEYS or "rules" not in spec:
        raise ValueError(
            f"{where}: 'blueprint' needs 'rules' and may have 'players', 'iterations', "
            f"'memory', 'faces', 'max_memory', 'max_bytes', 'tolerance', 'tremble', "
            f"'light_mass' and 'rule'; got "
            f"{sorted(spec) if isinstance(spec, dict) else spec!r}"
        )
    settings = blueprint_settings(spec)
    iterations = settings["iterations"]
    if type(iterations) is not int or iterations < 1:
        raise ValueError(
            f"{where}: blueprint iterations must be a positive int, got {iterations!r}"
        )
    check_memory(settings["memory"], settings["faces"])
    try:
        check_max_memory(settings["memory"], settings["max_memory"], settings["max_bytes"])
        check_tolerance(settings["tolerance"])
        check_tremble(settings["tremble"])
        check_light_mass(settings["light_mass"])
    except ValueError as err:
        raise ValueError(f"{where}: blueprint {err}") from None
    options = spec.get("rule", {})
    if not isinstance(options, dict):
        raise ValueError(f"{where}: blueprint 'rule' must be a mapping of rule options")
    rules = RuleSet.preset(spec["rules"], num_players=spec.get("players", 2), **options)
    check_supported(rules)
    if rules.hand != "common":
        raise ValueError(f"{where}: the blueprint needs common-hand rules")
    return rules


def _from_path(path: Path, spec: Mapping[str, Any]) -> Path:
    return path.parent / spec["pipeline"]


def _references(value: Any) -> list[tuple[str, str]]:
    """Every ``(stage, /sub/path)`` named in the strings of ``value``."""
    if isinstance(value, str):
        return REFERENCE.findall(value)
    if isinstance(value, dict):
        return [r for v in value.values() for r in _references(v)]
    if isinstance(value, list):
        return [r for v in value for r in _references(v)]
    return []


def _resolve(value: Any, lookup: Callable[[str, str], str]) -> Any:
    """``value`` with each reference replaced by ``lookup(stage, sub_path)``."""
    if isinstance(value, str):
        return REFERENCE.sub(lambda m: lookup(m.group(1), m.group(2)), value)
    if isinstance(value, dict):
        return {k: _resolve(v, lookup) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, lookup) for v in value]
    return value


# ------------------------------------------------------------------------- running
def run_pipeline(
    path: str | Path,
    runs_dir: str | Path = "runs",
    out: str | Path | None = None,
    sets: list[str] | None = None,
    until: str | None = None,
    plan_only: bool = False,
    log: Callable[[str], None] = print,
) -> Path | None:
    """Builds a pipeline's stages that are not built yet; returns the result's folder.

    Args:
        path: The pipeline file.
        runs_dir: Where the pipeline's folder (``RUNS_DIR/<pipeline>``) goes.
        out: Also write the result there (e.g. ``checkpoints/perudo_2p``; its other
            files, such as a model card, stay).
        sets: ``KEY=VALUE`` settings for every ``train`` stage and best response (e.g.
            ``device=cuda``); they take part in what the stage records.
        until: Build only up to this stage and return its model.
        plan_only: Print each stage and whether it is built; build nothing (returns None).
        log: Where progress lines go.

    Raises:
        ValueError: for a bad file or setting, or a finished stage whose definition
            has changed since it was built.
        CheckpointError: for a model that does not load.
    """
    pipeline = load_pipeline(path)
    overrides = parse_key_values(sets or [])
    if overrides:
        probe = _resolve(
            {s.name: s.spec for s in pipeline.stages if s.kind == "train"},
            lambda ref, sub: "/x",
        )
        for name, settings in probe.items():
            _check_train(f"pipeline {pipeline.path}, stage {name!r}", {**settings, **overrides})
    target = until or pipeline.result
    pipeline.stage(target)
    base = Path(runs_dir) / pipeline.name
    models: dict[str, Path] = {}
    stamps: dict[str, str | None] = {}  # each built stage's record, as its inputs' stamp
    stages = pipeline.stages[: [s.name for s in pipeline.stages].index(target) + 1]
    for number, stage in enumerate(stages, 1):
        header = f"[{pipeline.name} {number}/{len(stages)}] {stage.name} ({stage.kind})"
        folder = base / stage.name
        spec = _resolve(stage.spec, lambda ref, sub: _lookup(base, models, ref, sub, plan_only))
        taken = None
        if stage.kind == "from" and not plan_only:
            # the other file builds its stage, or checks it has not changed since
            taken = run_pipeline(
                _from_path(pipeline.path, stage.spec),
                runs_dir,
                sets=sets,
                until=stage.spec["stage"],
                log=log,
            )
        inputs = _inputs(stage, stamps, pipeline.path, runs_dir)
        fingerprint = _fingerprint(stage, spec, overrides, inputs)
        record = _read_record(folder)
        if record is not None and record["fingerprint"] != fingerprint:
            rebuild = "delete that folder to rebuild it and the stages after it"
            if stage.kind == "blueprint":  # its rounds are kept by their own settings
                rebuild = (
                    f"delete {folder / STAGE_RECORD} to rebuild it and the stages after it "
                    f"(the rounds it solved, in {folder / 'rounds'}, are read back where "
                    f"their rules and settings are the same: a new light_mass solves nothing "
                    f"again)"
                )
            raise ValueError(
                f"{header}: {folder} was built from other settings, or from earlier stages "
                f"built since, than the file's now; {rebuild}, or run with another --runs-dir"
            )
        if record is not None:
            models[stage.name] = Path(record["model"])
            stamps[stage.name] = _stamp(record)
            log(f"{header}: built ({record['model']})")
            continue
        if plan_only:
            log(f"{header}: to build")
            models[stage.name] = folder / "model"
            continue
        log(f"{header}: building in {folder}")
        start = time.perf_counter()
        if stage.kind == "train":
            _claim(folder, fingerprint, header)
            model = _run_train(stage, spec, overrides, base, log)
        elif stage.kind == "average":
            model = _run_average(spec, folder)
        elif stage.kind == "exploit":
            model = _run_exploit(stage, spec, overrides, base)
        elif stage.kind == "blueprint":
            model = _run_blueprint(stage, spec, folder, log)
        else:
            model = taken
        record = _write_record(folder, stage, fingerprint, model, time.perf_counter() - start)
        models[stage.name] = Path(model)
        stamps[stage.name] = _stamp(record)
        log(f"{header}: done in {time.perf_counter() - start:.0f} s -> {model}")
    if plan_only:
        return None
    result = models[target]
    if out is not None and (result / BLUEPRINT_FILE).is_file():
        Path(out).mkdir(parents=True, exist_ok=True)
        tmp = Path(out) / f".{BLUEPRINT_FILE}.{secrets.token_hex(4)}.tmp"
        shutil.copyfile(result / BLUEPRINT_FILE, tmp)
        os.replace(tmp, Path(out) / BLUEPRINT_FILE)
        log(f"wrote {out}")
    elif out is not None:
        net, meta = load_policy(result)
        write_checkpoint(Path(out), net, meta, keep_other_files=True)
        log(f"wrote {out}")
    return result


def _lookup(base: Path, models: Mapping[str, Path], ref: str, sub: str, plan: bool) -> str:
    """The path a reference stands for, once its stage is built.

    A plan, which builds nothing, names a run of a stage not built yet by its folder.
    """
    if not sub:
        return str(models[ref])
    folder = base / ref / sub.strip("/")
    checkpoints = step_checkpoints(folder / "checkpoints")
    if not checkpoints:
        if plan:
            return str(folder / "checkpoints" / "step_N")
        raise ValueError(f"${{{ref}{sub}}}: no checkpoint in {folder}")
    return str(checkpoints[-1])


BUILDING = "building.json"
"""The file, in a training stage's folder, that says which definition its run follows."""


def _claim(folder: Path, fingerprint: str, header: str) -> None:
    """Marks ``folder``'s run as following ``fingerprint``.

    Refuses to resume a run that followed another definition (an interrupted run of the
    stage as it was before).
    """
    path = folder / BUILDING
    if path.is_file():
        try:
            earlier = json.loads(path.read_text()).get("fingerprint")
        except (json.JSONDecodeError, AttributeError):
            earlier = None
        if earlier is not None and earlier != fingerprint and (folder / "checkpoints").is_dir():
            raise ValueError(
                f"{header}: {folder} holds an interrupted run of this stage as it was defined "
                f"before; delete that folder to start it again with the file's settings"
            )
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / (BUILDING + ".tmp")
    tmp.write_text(json.dumps({"fingerprint": fingerprint}) + "\n")
    os.replace(tmp, path)


def _stamp(record: Mapping[str, Any] | None) -> str | None:
    """What identifies one build of a stage: its fingerprint and the build's own id."""
    return None if record is None else f"{record['fingerprint']}@{record.get('build')}"


def _inputs(
    stage: Stage, stamps: Mapping[str, str | None], path: Path, runs_dir: str | Path
) -> dict[str, str | None]:
    """The builds a stage takes: the earlier stages it names, or the other pipeline's."""
    if stage.kind == "from":
        other = load_pipeline(_from_path(path, stage.spec))
        folder = Path(runs_dir) / other.name / stage.spec["stage"]
        return {"from": _stamp(_read_record(folder))}
    return {ref: stamps.get(ref) for ref, _ in _references(stage.spec)}


def _fingerprint(
    stage: Stage, spec: Any, overrides: Mapping[str, Any], inputs: Mapping[str, Any]
) -> str:
    """A digest of what builds the stage.

    That is its resolved definition, the overrides but those of :data:`HOW_SETTINGS`,
    and the builds of the stages it takes (``inputs``: one rebuilt since makes it stale).
    """
    sets = {k: v for k, v in overrides.items() if k not in HOW_SETTINGS}
    what = {
        "kind": stage.kind,
        "spec": spec,
        "take": stage.take,
        "sets": sets,
        "inputs": dict(inputs),
    }
    text = json.dumps(what, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _read_record(folder: Path) -> dict[str, Any] | None:
    record = folder / STAGE_RECORD
    if not record.is_file():
        return None
    try:
        data = json.loads(record.read_text())
        return data if Path(data["model"]).is_dir() else None
    except (json.JSONDecodeError, KeyError, TypeError):
        return None  # a torn record: the stage is built again


def _write_record(
    folder: Path, stage: Stage, fingerprint: str, model: Path, seconds: float
) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    record = {
        "stage": stage.name,
        "kind": stage.kind,
        "fingerprint": fingerprint,
        "model": str(model),
        "seconds": round(seconds, 1),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "build": secrets.token_hex(8),  # tells this build from a later one of the stage
    }
    tmp = folder / (STAGE_RECORD + ".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, folder / STAGE_RECORD)
    return record


def _run_train(stage: Stage, settings: dict, overrides: Mapping[str, Any], base: Path, log) -> Path:
    from liars_train import ppo
    from liars_train.runner import make_trainer
    from liars_train.tools.export import export

    values = {**settings, **overrides, "runs_dir": str(base), "run_name": stage.name}
    ckpt_dir = base / stage.name / "checkpoints"
    resume = bool(step_checkpoints(ckpt_dir)) and (base / stage.name / "config.json").is_file()
    # not resuming: whatever an interrupted start left (a best but no step_N) goes
    args = make_settings(
        ppo.Args, {**values, "overwrite": not resume}, source=f"stage {stage.name}"
    )
    if resume:
        log(f"  resuming {stage.name} from {step_checkpoints(ckpt_dir)[-1].name}")
    trainer = make_trainer(args, resume=resume)
    if not resume or trainer.update < trainer.num_updates:
        trainer.train()
    if stage.take == "last":
        source = step_checkpoints(ckpt_dir)[-1]
    else:
        source = ckpt_dir / stage.take
        if not source.is_dir():
            raise ValueError(f"stage {stage.name}: the run left no checkpoint {stage.take}")
    model = base / stage.name / "model"
    export(str(source), str(model))
    return model


def _run_blueprint(stage: Stage, spec: dict, folder: Path, log) -> Path:
    from liars_env.solver.last_bid import solve_blueprint

    rules = blueprint_rules(f"stage {stage.name}", spec)
    settings = blueprint_settings(spec)
    light_mass = settings.pop("light_mass")
    blueprint = solve_blueprint(
        rules, log=lambda line: log(f"  {line}"), resume=folder / "rounds", **settings
    )
    model = folder / "model"
    blueprint.save(model / BLUEPRINT_FILE, light_mass=light_mass)
    return model


def _run_average(spec: dict, folder: Path) -> Path:
    from liars_train.tools.average import average_policies

    net, meta = average_policies(spec["sources"], spec.get("weights"))
    model = folder / "model"
    write_checkpoint(model, net, meta)
    return model


def _run_exploit(stage: Stage, spec: dict, overrides: Mapping[str, Any], base: Path) -> Path:
    from liars_train.tools.exploit import exploit
    from liars_train.tools.export import export

    folder = base / stage.name
    shutil.rmtree(folder, ignore_errors=True)  # a best response does not resume
    sets = [*spec.get("set", []), *(f"{k}={json.dumps(v)}" for k, v in overrides.items())]
    result = exploit(
        spec["target"],
        rules=spec["rules"],
        players=spec["players"],
        steps=spec["steps"],
        games=spec.get("games", 3000),
        seed=spec["seed"],
        init=spec.get("init", "scratch"),
        sets=[*sets, f"run_name={stage.name}", "progress=false"],
        runs_dir=str(base),
        progress=False,
    )
    (folder / "exploit.json").write_text(json.dumps(result, indent=1) + "\n")
    model = folder / "model"
    export(str(step_checkpoints(folder / "checkpoints")[-1]), str(model))
    return model
