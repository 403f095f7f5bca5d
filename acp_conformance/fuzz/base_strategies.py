"""The leaf strategies of the fuzzer: sizes, JSON values, paths, uris, request ids, and the strings the
spec refines beyond the schema (base64, https:/data: uris, ISO 8601 times; see ``SPEC_REFINEMENTS``)."""

from __future__ import annotations

import base64
import functools
import string
from typing import Any, Iterable

from hypothesis import strategies as st

# sizes: big enough to reach "three blocks", "an empty string", small enough to stay fast
MAX_ITEMS = 6
MAX_TEXT = 24
# integers without bounds in the schema: the interoperable JSON range (IEEE double, 2^53)
JSON_INT_MIN, JSON_INT_MAX = -(2 ** 53 - 1), 2 ** 53 - 1

_text = st.text(max_size=MAX_TEXT)
_path_part = st.text(alphabet=string.ascii_letters + string.digits + "_-. ", min_size=1, max_size=10) \
    .filter(lambda s: s not in (".", ".."))
absolute_paths = st.lists(_path_part, min_size=0, max_size=4).map(lambda parts: "/" + "/".join(parts))
relative_paths = st.lists(_path_part, min_size=1, max_size=3).map("/".join)
uris = st.builds(lambda scheme, path: f"{scheme}://example.com/{path}",
                 st.sampled_from(["https", "http", "file"]), st.text(alphabet=string.ascii_lowercase + "/", max_size=12))
json_scalars = st.none() | st.booleans() | st.integers(JSON_INT_MIN, JSON_INT_MAX) \
    | st.floats(allow_nan=False, allow_infinity=False) | _text
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(_text, inner, max_size=3), max_leaves=6)
# an object with no declared properties (``_meta``, ``rawInput``, ...): cheap, mostly small
free_objects = st.just({}) | st.dictionaries(_text, json_scalars, min_size=1, max_size=3)
# request ids: the whole legal range (integers and strings), boundaries included by hypothesis itself
request_ids = st.integers(JSON_INT_MIN, JSON_INT_MAX) | st.integers(0, JSON_INT_MAX) | _text


_b64_text = st.binary(max_size=MAX_TEXT).map(lambda b: base64.b64encode(b).decode("ascii"))
_https_or_data = st.one_of(st.text(alphabet=string.ascii_lowercase + "/.", max_size=12).map(
    lambda p: "https://example.com/" + p), _b64_text.map(lambda d: "data:image/png;base64," + d))
_iso8601 = st.datetimes(timezones=st.just(__import__("datetime").timezone.utc)).map(
    lambda d: d.isoformat().replace("+00:00", "Z"))
_REFINED_STRINGS = {"base64": _b64_text, "https-or-data-uri": _https_or_data, "iso8601": _iso8601}


def sampled(values: Iterable[Any]) -> st.SearchStrategy:
    """``st.sampled_from(values)``, made once per distinct sequence of values. A strategy built anew at each draw
    (the sessions a rule may pick, the kinds a request may break) makes hypothesis check it again (is it empty,
    are its values reusable): against the TypeScript agent those checks were 9% of the fuzzer's CPU samples, 4%
    once these were made once. The draws are the same."""
    t = tuple(values)
    try:
        return _sampled(t)
    except TypeError:  # values that cannot be a cache key
        return st.sampled_from(t)


@functools.lru_cache(maxsize=4096)
def _sampled(values: tuple) -> st.SearchStrategy:
    return st.sampled_from(values)
