"""Sphinx configuration of the liars-dice docs site (``sphinx-build -W docs build/docs``).

Sphinx rather than MkDocs because the docstrings already cross-reference each other with
Sphinx roles (``:mod:``, ``:class:``, ``:func:``): autodoc + napoleon turn them into links
and ``-W`` turns a broken one into a failed build, as in Gymnasium's and PettingZoo's docs.
The pages themselves are Markdown (MyST), the same files GitHub shows. The tutorials
and the course's labs are Python scripts that sphinx-gallery renders into pages and
Jupyter notebooks (as in Gymnasium's docs): the tutorials run during the build, so a
broken one fails it; the labs' student versions (exercises left to fill in) are shown
unexecuted.
"""

import functools
import importlib
from pathlib import Path

from liars_env.version import __version__
from liars_train.course.notebooks import INSTALL_CELL, student_version

project = "liars-dice"
author = "liars-dice developers"
release = version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx.ext.intersphinx",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
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

COLAB_LINE = (
    "**Run it in Colab:** download the notebook (the link at the bottom of the page), "
    "open it at https://colab.research.google.com (File, Upload notebook) and run its "
    "first cell, which installs liars-dice from its repository with CPU torch. No GPU is "
    "needed. Locally: ``pip install jupyter`` where liars-dice is installed."
)
"""The line under the title of every gallery page (tutorials and labs)."""


def write_student_labs() -> str:
    """Writes the labs' student versions (``docs/labs`` → ``_generated/lab_sources``).

    The labs' pages show the student version (exercises left to fill in), unexecuted;
    the instructor's sources, solutions included, stay out of the site. The notebooks'
    install cell is :data:`liars_train.course.notebooks.INSTALL_CELL` (its repository
    address, ``REPOSITORY_URL``, is set there).
    """
    docs = Path(__file__).resolve().parent
    out = docs / "_generated" / "lab_sources"
    out.mkdir(parents=True, exist_ok=True)
    (out / "README.txt").write_text(
        "Labs\n====\n\nThe three labs, as students get them (see the course page).\n"
    )
    for source in sorted((docs / "labs").glob("lab_*.py")):
        (out / source.name).write_text(student_version(source.read_text(), str(source)))
    return "_generated/lab_sources"


_GALLERIES = {"tutorials": "_generated/tutorials", write_student_labs(): "_generated/labs"}
_GALLERIES = {  # a folder that is not there (a one-page test site) is no gallery
    src: out for src, out in _GALLERIES.items() if (Path(__file__).parent / src).is_dir()
}
sphinx_gallery_conf = {
    "examples_dirs": list(_GALLERIES),
    "gallery_dirs": list(_GALLERIES.values()),
    "filename_pattern": r"/tutorials/plot_",  # run the tutorials; show the labs unexecuted
    "ignore_pattern": r"__init__\.py|README",
    "run_stale_examples": True,  # always run: a library change can break an unchanged one
    "first_notebook_cell": INSTALL_CELL,
    "download_all_examples": False,
    "write_computation_times": False,
    "remove_config_comments": True,
    "min_reported_time": 1e9,
    "show_signature": False,
    "reset_modules": ("matplotlib",),
}

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
    app.connect("source-read", add_colab_line)


def add_colab_line(app, docname, source):
    """Puts :data:`COLAB_LINE` under the title of each page sphinx-gallery generated."""
    if not docname.startswith("_generated/") or docname.endswith("/index"):
        return
    lines = source[0].split("\n")
    for i in range(1, len(lines)):
        if lines[i] and set(lines[i]) == {"="} and lines[i - 1].strip():
            lines.insert(i + 1, f"\n{COLAB_LINE}\n")
            source[0] = "\n".join(lines)
            return


@functools.cache
def _resolve(dotted: str):
    """The object a dotted path names (``pkg.module.Class.method``), or ``None``.

    Cached: the build asks for the same few thousand paths for each of its references.
    """
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


@functools.lru_cache(maxsize=4)
def _documented_as(names: tuple[str, ...]) -> dict[int, list[str]]:
    """The documented names of each object (by ``id``) that ``names`` resolve to."""
    out: dict[int, list[str]] = {}
    for name in names:
        obj = _resolve(name)
        if obj is not None:
            out.setdefault(id(obj), []).append(name)
    return out


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
        same = _documented_as(tuple(domain.objects)).get(id(wanted), [])
        matches = same if len(same) == 1 else [n for n in same if n in suffix]
    else:
        matches = suffix
    if len(matches) != 1:
        return None
    return domain.resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], matches[0], node, contnode
    )
