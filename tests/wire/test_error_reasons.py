"""A subclass the caller dispatches on (GraphNotRegisteredError) crosses the wire as itself:
its ErrorReply carries the canonical code (a peer that knows no reasons still raises the
code's class) and a reason, checked against the registry on arrival."""

import pytest

from zmtf.framework import errors
from zmtf.wire import codec
from zmtf.wire import messages as m


def test_a_registered_subclass_is_raised_again_as_itself():
    error = errors.GraphNotRegisteredError(None, None, "graph 'k' of session 's' is not registered")
    reply = codec.decode(codec.encode(m.error_reply(3, error)))
    assert reply.code == errors.NOT_FOUND and reply.reason == "GRAPH_NOT_REGISTERED"
    again = m.error_from(reply)
    assert type(again) is errors.GraphNotRegisteredError
    assert isinstance(again, errors.NotFoundError)
    assert again.message == error.message


def test_plain_errors_carry_no_reason():
    reply = m.error_reply(4, errors.NotFoundError(None, None, "no such thing"))
    assert reply.reason is None
    assert type(m.error_from(reply)) is errors.NotFoundError
    assert m.error_reply(5, KeyError("x")).reason is None


@pytest.mark.parametrize("code, reason, expected", [
    (errors.NOT_FOUND, "NO_SUCH_REASON", errors.NotFoundError),   # unknown here: the code's class
    (errors.INTERNAL, "GRAPH_NOT_REGISTERED", errors.InternalError),   # code and reason disagree
    (999, "GRAPH_NOT_REGISTERED", errors.UnknownError),
])
def test_a_reason_counts_only_when_it_names_a_subclass_of_the_code(code, reason, expected):
    reply = codec.decode(codec.encode(m.ErrorReply(id=6, code=code, message="x", reason=reason)))
    assert type(m.error_from(reply)) is expected


def test_the_reason_field_is_validated():
    with pytest.raises(errors.InvalidArgumentError, match="field 'reason' must be a str or None"):
        m.ErrorReply(code=5, message="x", reason=7)
