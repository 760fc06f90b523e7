"""Sphinx configuration of the liars-dice docs site (``sphinx-build -W docs build/docs``).

Sphinx rather than MkDocs because the docstrings already cross-reference each other with
Sphinx roles (``:mod:``, ``:class:``, ``:func:``): autodoc + napoleon turn them into links
and ``-W`` turns a broken one into a failed build, as in Gymnasium's and PettingZoo's docs.
The pages themselves are Markdown (MyST), the same files GitHub shows.
"""

from liars_env.version import __version__

project = "liars-dice"
author = "liars-dice developers"
release = version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx.ext.intersphinx",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # "Attributes:" as fields, not a second description
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_mock_imports = ["pyspiel", "ray"]

# Every cross reference must resolve, except to types of other libraries that the
# intersphinx inventories (not reachable offline) would have resolved.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(np|numpy|torch|gymnasium|pettingzoo|collections|typing|pathlib|argparse)\..*"),
    (
        r"py:.*",
        r"(importlib|pyspiel|starlette)\..*|ResetNeeded|(\w+\.)*_\w+",
    ),  # other libraries; private names
    (r"py:.*", r"(ndarray|Tensor|Path|Any|Callable|Sequence|Iterable|Iterator|Mapping)"),
    (r"py:.*", r"(ModuleType|TextIO|NamedTuple|Protocol|Generator|Namespace)"),
    (r"py:.*", r".*\._Ints|.*config\.T"),  # type aliases and type variables
]
intersphinx_mapping: dict = {}  # offline builds: no inventories

html_theme = "furo"
html_title = f"liars-dice {release}"


def setup(app):
    """Gives napoleon only functions, classes and modules; adds the reference resolver.

    Napoleon reads an attribute docstring's first ``a: b`` as ``type: text``; ours are
    plain sentences ("Updates between evaluations (0: only at the end).").
    """
    from sphinx.ext.napoleon import _process_docstring

    listeners = app.events.listeners["autodoc-process-docstring"]
    for listener in list(listeners):
        if listener.handler is _process_docstring:
            listeners.remove(listener)

    def napoleon_except_attributes(app, what, name, obj, options, lines):
        if what not in ("attribute", "data", "property"):
            _process_docstring(app, what, name, obj, options, lines)

    app.connect("autodoc-process-docstring", napoleon_except_attributes)
    app.connect("missing-reference", resolve_as_python_does)


def _resolve(dotted: str):
    """The object a dotted path names (``pkg.module.Class.method``), or ``None``."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj
    return None


def resolve_as_python_does(app, env, node, contnode):
    """Resolves a reference the way Python would resolve the name.

    A short name (``RuleSet`` in a docstring or a type hint of a module that imports
    it) or a package-level path (``liars_env.batched.BatchedEnv``, re-exported) goes to
    the one documented object that is the same Python object; failing that, to the only
    documented object whose path ends with the name. Anything still ambiguous or absent
    stays a broken reference (and fails the ``-W`` build).
    """
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    domain = env.get_domain("py")
    module = node.get("py:module")
    wanted = (_resolve(f"{module}.{target}") if module else None) or _resolve(target)
    suffix = [n for n in domain.objects if n == target or n.endswith("." + target)]
    if wanted is not None:
        same = [n for n in domain.objects if _resolve(n) is wanted]
        matches = same if len(same) == 1 else [n for n in same if n in suffix]
    else:
        matches = suffix
    if len(matches) != 1:
        return None
    return domain.resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], matches[0], node, contnode
    )
