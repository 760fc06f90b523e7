"""Arrays packed with xz (LZMA) inside a plain ``.npz``: no pickles, smaller than zip's deflate.

:func:`numpy.savez_compressed` compresses each array with zip's deflate. A blueprint's
probabilities, one byte each, pack about 25% smaller with xz (the standard library's
``lzma``), and 45% smaller when laid out hand by hand
(:func:`~liars_env.solver.blueprint_file.write_blueprint_file`). :func:`pack` turns each
array into the bytes of its xz stream (a ``uint8`` array) and records its dtype and
shape in a JSON entry; :func:`unpack` reverses it. The container stays an ``.npz`` read
with ``allow_pickle=False``.

Example::

    >>> import numpy as np
    >>> packed = pack({"a": np.arange(6, dtype=np.int16).reshape(2, 3)})
    >>> sorted(packed)
    ['__packed__', 'a']
    >>> unpack(packed)["a"].tolist()
    [[0, 1, 2], [3, 4, 5]]
"""

from __future__ import annotations

import json
import lzma
from collections.abc import Mapping

import numpy as np

LAYOUT = "__packed__"
"""The entry holding each packed array's dtype and shape (JSON)."""


def pack(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each array as the ``uint8`` bytes of its xz stream, plus the :data:`LAYOUT` entry.

    Raises:
        ValueError: for an array of objects (it would need a pickle) or a name that is
            :data:`LAYOUT`.
    """
    out: dict[str, np.ndarray] = {}
    layout: dict[str, list] = {}
    for name, array in arrays.items():
        array = np.asarray(array)
        if name == LAYOUT or array.dtype.hasobject:
            raise ValueError(f"cannot pack {name!r} ({array.dtype}): expected a numeric array")
        layout[name] = [array.dtype.str, list(array.shape)]
        raw = lzma.compress(np.ascontiguousarray(array).tobytes(), preset=6)
        out[name] = np.frombuffer(raw, dtype=np.uint8)
    out[LAYOUT] = np.array(json.dumps(layout))
    return out


def unpack(data: Mapping[str, np.ndarray], names: list[str] | None = None) -> dict[str, np.ndarray]:
    """The arrays :func:`pack` packed (only ``names``, if given).

    Raises:
        ValueError: for data without a layout, a missing array, a damaged stream or one
            whose size is not its shape's.
    """
    try:
        layout = json.loads(str(data[LAYOUT]))
    except KeyError:
        raise ValueError(f"no {LAYOUT!r} entry: not packed arrays") from None
    out = {}
    for name in layout if names is None else names:
        if name not in layout:
            raise ValueError(f"no packed array {name!r}")
        dtype, shape = layout[name]
        try:
            raw = lzma.decompress(np.asarray(data[name]).tobytes())
            out[name] = np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape).copy()
        except (KeyError, lzma.LZMAError, ValueError) as err:
            raise ValueError(f"packed array {name!r} is damaged: {err}") from err
    return out
