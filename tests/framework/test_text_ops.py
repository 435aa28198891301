"""String transforms: substr, strip, lower/upper, regex_replace / regex_full_match with RE2's
meaning (what RE2 reads differently from Python's re, and what is refused), reduce_join's
axis order; values by hand, shapes, op types and errors."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import InvalidArgumentError
from zmtf.testing import run_fetches as run


@pytest.mark.parametrize("pos,length,expected", [
    (1, 2, [b"el", b"b"]), (0, 10, [b"hello", b"ab"]), (-2, 1, [b"l", b"a"]),
    (1, -1, [b"ello", b"b"]), (2, 0, [b"", b""]),
])
def test_substr(pos, length, expected):
    out = tf.substr(tf.constant(["hello", "ab"]), pos, length)
    assert out.op.type == "Substr" and out.shape.as_list() == [2]
    assert run(out).tolist() == expected


def test_substr_per_element_and_utf8_characters():
    words = tf.constant(["hello", "world"])
    assert run(tf.substr(words, tf.constant([0, -2], tf.int64),
                         tf.constant([1, 3], tf.int64))).tolist() == [b"h", b"ld"]
    text = tf.constant(["héllo", "日本語"])
    assert run(tf.strings.substr(text, 1, 2, unit="UTF8_CHAR")).tolist() == \
        ["él".encode(), "本語".encode()]


def test_substr_out_of_range_names_string_and_index():
    with pytest.raises(InvalidArgumentError, match=r"pos 3 out of range for string b'ab' at index 1"):
        run(tf.substr(tf.constant(["hello", "ab"]), 3, 1))
    with pytest.raises(ValueError, match="scalars or have the input's shape"):
        tf.substr(tf.constant([["a", "b"]]), [[0], [1]], [[0], [1]])


def test_strip_lower_upper():
    words = tf.constant(["  Hi There\t\n", "ÀB x", "\x0bv\x0c", "straße"])
    assert run(tf.strings.strip(words)).tolist() == [b"Hi There", "ÀB x".encode(), b"v",
                                                     "straße".encode()]
    assert run(tf.strings.lower(words)).tolist()[:2] == [b"  hi there\t\n", "Àb x".encode()]
    assert run(tf.strings.lower(words, encoding="utf-8")).tolist()[1] == "àb x".encode()
    assert run(tf.strings.upper(words)).tolist()[3] == "STRAßE".encode()     # ASCII only
    assert run(tf.strings.upper(words, encoding="utf-8")).tolist()[3] == b"STRASSE"
    assert tf.string_strip(words).op.type == "StringStrip"


@pytest.mark.parametrize("text,pattern,rewrite,expected", [
    ("a.b.c", r"\.", "!", "a!b!c"),
    ("a.b", r"(\w)\.(\w)", r"\2-\1 \0 \\", "b-a a.b \\"),    # RE2 rewrites: \0, \\
    ("ab\n", r"b$", "X", "ab\n"),                            # $ is the end of the text
    ("ab\nab", r"(?m)b$", "X", "aX\naX"),
    ("ab\n", r"\n\z", "!", "ab!"),
    ("é", r"^.$", "one", "one"),                             # . is one UTF-8 character
    ("éa1_", r"\w", "W", "éWWW"),                            # \w is ASCII
    ("\x0bv ", r"\s", "_", "\x0bv_"),                        # RE2's \s has no \v
    ("abc", r"x*", "-", "-a-b-c-"),
    ("a]b-c^", r"[]^-]", "#", "a#b#c#"),
    ("é", r"\x{e9}", "e", "e"),
    ("key=val", r"(?P<k>\w+)=(\w+)", r"\2:\1", "val:key"),
    ("aa", r"(a)", r"\2", "aa"),                             # more groups than exist: unchanged
])
def test_regex_replace_has_re2_meaning(text, pattern, rewrite, expected):
    out = tf.regex_replace(tf.constant([text]), pattern, rewrite)
    assert out.op.type == "StaticRegexReplace"
    assert run(out).tolist() == [expected.encode()]


def test_regex_replace_first_only_and_tensor_patterns():
    words = tf.constant(["a.b.c"])
    assert run(tf.regex_replace(words, r"\.", "!", replace_global=False)).tolist() == [b"a!b.c"]
    dynamic = tf.strings.regex_replace(words, tf.constant(r"\w"), tf.constant("x"))
    assert dynamic.op.type == "RegexReplace" and run(dynamic).tolist() == [b"x.x.x"]


@pytest.mark.parametrize("pattern,message", [
    (r"(", "Invalid pattern: \\(, error: missing \\)"),
    (r"a(?=b)", r"invalid perl operator: \(\?="),
    (r"(a)\1", r"invalid escape sequence: \\1"),
    (r"\p{L}", "not supported"),
    (r"[[:alpha:]]", "POSIX"),
    (r"a*+", "bad repetition operator"),
])
def test_patterns_re2_refuses_or_reads_otherwise_are_refused(pattern, message):
    with pytest.raises(InvalidArgumentError, match=message):
        run(tf.regex_replace(tf.constant(["ab"]), pattern, "x"))


def test_regex_full_match():
    words = tf.constant(["ab\n", "ab", "abc"])
    out = tf.strings.regex_full_match(words, r"ab|abc")
    assert out.dtype == tf.bool and out.op.type == "StaticRegexFullMatch"
    assert run(out).tolist() == [False, True, True]
    assert run(tf.strings.regex_full_match(words, tf.constant("a.*"))).tolist() == \
        [False, True, True]


@pytest.mark.parametrize("kwargs,shape,expected", [
    ({}, [], b"abcdef"),
    ({"axis": 0}, [3], [b"ad", b"be", b"cf"]),
    ({"axis": -1, "keep_dims": True}, [2, 1], [[b"abc"], [b"def"]]),
    ({"axis": [0, 1], "separator": "-"}, [], b"a-d-b-e-c-f"),    # first axis listed fastest
    ({"axis": [1, 0], "separator": "-"}, [], b"a-b-c-d-e-f"),
    ({"axis": 1, "separator": ", "}, [2], [b"a, b, c", b"d, e, f"]),
])
def test_reduce_join(kwargs, shape, expected):
    out = tf.reduce_join(tf.constant([["a", "b", "c"], ["d", "e", "f"]]), **kwargs)
    assert out.shape.as_list() == shape and out.op.name == "ReduceJoin/ReduceJoin"
    assert np.asarray(run(out)).tolist() == expected


def test_reduce_join_of_nothing_and_bad_axis():
    empty = tf.zeros([2, 0], tf.string)
    assert run(tf.strings.reduce_join(empty, axis=1)).tolist() == [b"", b""]
    with pytest.raises(ValueError, match="Invalid reduction dimension 2"):
        tf.reduce_join(tf.constant([["a"]]), axis=2)
