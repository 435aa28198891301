"""variable_scope(custom_getter=...): TF1's hook around get_variable."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf


def test_getter_sees_full_name_and_keywords_and_can_change_them():
    seen = []

    def local_getter(getter, name, *args, **kwargs):
        seen.append((name, kwargs["trainable"], kwargs["reuse"]))
        kwargs["collections"] = [tf.GraphKeys.LOCAL_VARIABLES]
        kwargs["trainable"] = False
        return getter(name, *args, **kwargs)

    with tf.variable_scope("outer", custom_getter=local_getter):
        v = tf.get_variable("v", initializer=tf.constant([1.0, 2.0]))
    assert seen == [("outer/v", True, False)]
    assert v.name == "outer/v:0"
    assert tf.trainable_variables() == [] and tf.local_variables() == [v]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_nested_getters_inner_first_and_inherited_by_child_scopes():
    order = []

    def tagging(tag):
        def getter(getter, name, *args, **kwargs):
            order.append(tag)
            return getter(name, *args, **kwargs)
        return getter

    with tf.variable_scope("a", custom_getter=tagging("outer")):
        with tf.variable_scope("b", custom_getter=tagging("inner")):
            tf.get_variable("x", [1])
        with tf.variable_scope("c"):
            tf.get_variable("y", [1])
    assert order == ["inner", "outer", "outer"]


def test_getter_may_create_extra_variables_and_reuse_goes_through_it():
    def twin_getter(getter, name, *args, **kwargs):
        var = getter(name, *args, **kwargs)
        if not kwargs["reuse"]:
            getter("twin/" + name, *args, **{**kwargs, "trainable": False})
        return var

    with tf.variable_scope("s", custom_getter=twin_getter):
        first = tf.get_variable("w", [2], initializer=tf.ones_initializer())
    with tf.variable_scope("s", custom_getter=twin_getter, reuse=True):
        again = tf.get_variable("w", [2])
    assert again is first
    assert sorted(v.op.name for v in tf.global_variables()) == ["s/w", "twin/s/w"]


def test_custom_getter_must_be_callable():
    with pytest.raises(ValueError, match="custom_getter must be callable"):
        with tf.variable_scope("x", custom_getter=3):
            pass
